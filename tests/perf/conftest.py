"""Every benchmark prints how fast this machine ran plain Python around it: the same code measures two to three
times faster on some hours of the same 2-core machine than on others (the same loop written at a script's top level
took 0.24 s on one day, 0.43-0.77 s on another), so a figure is read, and compared with another day's, beside this
one."""
from __future__ import annotations

import os
import time

import pytest

REFERENCE_STEPS = 5_000_000


def reference_loop_s() -> float:
    """Seconds this process takes for a 5,000,000-step pure-Python loop (the machine's speed this hour)."""
    started, total = time.perf_counter(), 0
    for step in range(REFERENCE_STEPS):
        total += step
    return time.perf_counter() - started


@pytest.fixture(autouse=True)
def _machine_speed_beside_the_figures(request):
    if request.node.get_closest_marker("perf") is None:
        yield
        return
    before, load_before = reference_loop_s(), os.getloadavg()[0]
    yield
    print(f"\n  this machine around {request.node.name}: a {REFERENCE_STEPS:,}-step Python loop took {before:.2f} s "
          f"before (load {load_before:.2f}) and {reference_loop_s():.2f} s after (load {os.getloadavg()[0]:.2f})")
