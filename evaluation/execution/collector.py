"""The cyclic garbage collector while a run's event loop runs (no Django).

A run allocates many short-lived container objects (a request's messages, its response, its row): with the
default threshold (a collection of the youngest generation every 700 allocations, of all of them every 70,000)
the collector's full passes walked every object of the worker process (Django, the SDK, the ROUGE-L scorer:
what the apps' ready() froze is skipped, what was imported after is not) every second or so, stopping the event
loop for tens of milliseconds each time. The requests answered meanwhile waited: at concurrency 256 a request's
99th percentile was 125-155 ms against a 50 ms server, 61-64 ms with this.

During a run the youngest generation is collected after ``RUN_THRESHOLD`` allocations instead: cycles made
during the run are still collected, and memory stays bounded (the 12,000-request benchmark checks that it does
not grow with the rows). Afterwards the thresholds are as they were. Runs that overlap in one process (threads)
share one such period: the first to start begins it, the last to end ends it.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

from foundation.process_start import YOUNG_GENERATION_THRESHOLD

#: Allocations (less deallocations) of container objects between two collections of the youngest generation: the
#: web workers' (foundation.process_start).
RUN_THRESHOLD = YOUNG_GENERATION_THRESHOLD

_lock = threading.Lock()
_state: dict = {"runs": 0, "threshold": None}


@contextlib.contextmanager
def collector_for_a_run() -> Iterator[None]:
    with _lock:
        if _state["runs"] == 0:
            _state["threshold"] = threshold = gc.get_threshold()
            gc.set_threshold(max(RUN_THRESHOLD, threshold[0]), *threshold[1:])
        _state["runs"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["runs"] -= 1
            if _state["runs"] == 0:
                gc.set_threshold(*_state["threshold"])
