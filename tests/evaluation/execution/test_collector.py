"""evaluation.execution.collector: set for a run, as it was afterwards, and cycles are still collected meanwhile."""
from __future__ import annotations

import gc
import threading
import weakref

import pytest

from evaluation.execution.collector import RUN_THRESHOLD, collector_for_a_run


def test_the_youngest_generation_waits_longer_during_a_run_and_everything_is_restored_after():
    before_threshold, before_frozen = gc.get_threshold(), gc.get_freeze_count()
    assert before_frozen > 1000  # the apps' ready() froze what Django loaded

    def neither_frozen_nor_unfrozen() -> bool:
        # A frozen object freed meanwhile leaves the count; a freeze would add thousands, an unfreeze empty it.
        return before_frozen - 1000 < gc.get_freeze_count() <= before_frozen

    with collector_for_a_run():
        assert gc.get_threshold()[0] == max(RUN_THRESHOLD, before_threshold[0]) > before_threshold[0]
        assert gc.get_threshold()[1:] == before_threshold[1:]
        assert gc.isenabled() and neither_frozen_nor_unfrozen()
    assert gc.get_threshold() == before_threshold and neither_frozen_nor_unfrozen()


def test_an_error_in_the_run_restores_the_collector():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), collector_for_a_run():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == before


def test_overlapping_runs_in_threads_share_one_period():
    before = gc.get_threshold()
    entered, leave_first, first_left = threading.Event(), threading.Event(), threading.Event()

    def first():
        with collector_for_a_run():
            entered.set()
            leave_first.wait(10)
        first_left.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert entered.wait(10)
    with collector_for_a_run():
        leave_first.set()
        assert first_left.wait(10)
        thread.join(10)
        # The first run ended, this one has not: still set for a run.
        assert gc.get_threshold()[0] == max(RUN_THRESHOLD, before[0])
    assert gc.get_threshold() == before


class _Node:
    pass


def test_cycles_made_during_a_run_are_still_collected_without_being_asked():
    alive = weakref.WeakSet()
    with collector_for_a_run():
        for _ in range(20 * RUN_THRESHOLD):
            node = _Node()
            node.self = node  # a cycle: only the collector frees it
            alive.add(node)
        del node
        left = len(alive)
    # Collected as the run went on: what is left is at most what a few collection periods allocate.
    assert left < 4 * RUN_THRESHOLD, f"{left} of {20 * RUN_THRESHOLD} cycles left uncollected"
    gc.collect()
    assert len(alive) == 0
