"""gunicorn settings of the image (docker/Dockerfile CMD, compose's web service).

Sync workers, about two per core, with the database connection pool: the fastest setup in
tests/perf/test_study_load.py. The app, every app's views and the Celery task modules a launch sends
to are imported once, in the master, before the workers fork: a worker is ready at once (and shares
that memory) instead of importing the URLconf (seconds of CPU) inside its first request, where
gunicorn's timeout can kill it, or the task modules inside its first launch of a run. Then all of it is
frozen out of the garbage collector's walks (foundation.process_start).

A sync worker waits for the client's own close after each response (gunicorn's graceful close): one network round
trip per request. Facing participants' browsers over a real network, put a buffering proxy in front (README, "The
ninth session").
"""
bind = "0.0.0.0:8000"
workers = 4
worker_class = "sync"
accesslog = "-"
preload_app = True


def when_ready(server):
    from django.db import connections
    from django.urls import get_resolver

    assert get_resolver().url_patterns  # imports the views now
    from evaluation.execution import queueing

    queueing.load_tasks()  # and the task modules a launch sends to (not at a worker's first launch)
    # Nothing opened in the master may be shared by the forked workers.
    for connection in connections.all(initialized_only=True):
        connection.close()
        if hasattr(connection, "close_pool"):
            connection.close_pool()
    from studies.page_templates import load_templates

    load_templates()  # every participant page compiled once, here, not in each worker's first request
    from foundation.process_start import freeze_startup_objects

    freeze_startup_objects()  # last: what the master loaded is never walked by the workers' garbage collections


def post_fork(server, worker):
    from foundation.process_start import collect_young_less_often

    collect_young_less_often()  # a request makes many short-lived objects: fewer collections of the youngest
