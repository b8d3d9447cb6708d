"""What a long-lived process loaded before it starts working is kept out of the garbage collector's way.

The apps' `ready()` (detectbench_web.apps) freezes what Django loaded. A process loads much more before it serves
anything: gunicorn's master imports the URLconf with every view, DRF and the API schema's modules, and the Celery task
modules (docker/gunicorn.conf.py `when_ready`); a Celery worker imports the model SDK (evaluation.tasks). Those
objects live as long as the process too, and the cyclic collector walked all of them at every full collection.
Measured with a gc callback timing every collection: in the image's four gunicorn workers while 400 participants
joined and started, 80-200 ms of collection per worker, mostly one or two full collections of 50-100 ms (every
request queued behind them waited); in a run of 11,960 model calls in one process (the SDK imported as a worker
imports it), 139-144 ms, with pauses of the event loop, 256 calls in flight, of up to 63 ms.

`freeze_startup_objects` collects, then moves every object alive to the permanent generation (`gc.freeze`), which no
collection visits: then 35-47 ms per gunicorn worker and 10 ms for the model run, its longest pause 3 ms. Called just
before the work starts, and before a fork, as Python's documentation recommends (the collector no longer writes to
the pages the workers share with their parent). Objects created afterwards are collected as before.

A web worker then makes many short-lived container objects per request (a request, its forms, its model instances,
a page's template context); with Python's default threshold the youngest generation was collected every 700 of them,
several times a request. `collect_young_less_often` (gunicorn's `post_fork`) collects it every
`YOUNG_GENERATION_THRESHOLD` allocations instead, as a model run's event loop does (evaluation.execution.collector):
alternated three times with the default over 100 and 300 starts at once, 3.4-4.0 ms of gunicorn CPU per start against
3.7-4.5, and a lower p95 in each pair. Cycles are still collected, a few megabytes later at most.
"""
from __future__ import annotations

import gc

#: Allocations (less deallocations) of container objects between two collections of the youngest generation.
YOUNG_GENERATION_THRESHOLD = 20_000


def freeze_startup_objects() -> int:
    """Collect, then freeze every object alive (those frozen earlier stay frozen); returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def collect_young_less_often() -> None:
    """Collect the youngest generation every YOUNG_GENERATION_THRESHOLD allocations (the older ones as before)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, older, oldest)
