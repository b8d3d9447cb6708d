"""The project package: settings, URLs and the Celery app, composing foundation and the three apps.

Starting a process (manage.py, the web server, a Celery worker) creates some hundred thousand objects that live as
long as the process, and Python's cyclic garbage collector would walk them over and over while they are being created
(a third of a second of `manage.py check`). So collection waits: it is off from here until Django has loaded the
apps, when the objects made so far are frozen out of its way and it runs as usual (detectbench_web.apps).
"""
import gc

gc.disable()

from detectbench_web.celery import app as celery_app  # noqa: E402  (after gc.disable: Celery's imports too)

__all__ = ("celery_app",)
