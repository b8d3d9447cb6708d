"""Shared fixtures of the evaluation tests: compute a run's rows on the test's own connection."""
from __future__ import annotations

import asyncio

import pytest

from evaluation.execution import chunks as execution
from evaluation.model_calls.engine import Engine
from evaluation.models import Run
from evaluation.prompting.methods import get_method


def compute_rows(run: Run) -> Run:
    """The missing or failed rows of a run through the real planner, engine, built-in client and writer, on this thread (the test
    transaction is not visible to the executor's database thread), then the run's status is refreshed."""
    wanted, _ = execution._wanted(run, run.item_ids)  # as a resume: rows done without error are kept
    jobs = execution.JobPlanner.for_run(run).jobs(wanted)
    found = []
    engine = Engine(method=get_method(run.method), client=execution.make_client(run.endpoint, seed=run.seed),
                    k=run.k, concurrency=8)
    asyncio.run(engine.run(jobs, on_result=found.append))
    execution._write(run, found, run.endpoint.model)
    execution.refresh_status(run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def compute():
    return compute_rows
