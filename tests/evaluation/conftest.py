"""Shared fixtures of the evaluation tests: compute a run's rows on the test's own connection; the sample items and a
free-text run over them with known, distinct answers (the judge's tests)."""
from __future__ import annotations

import asyncio

import pytest

from annotation.models import Item
from evaluation.execution import chunks as execution
from evaluation.execution.planning import JobPlanner
from evaluation.model_calls.engine import Engine
from evaluation.models import Result, Run
from evaluation.prompting.methods import get_method
from evaluation.services import runs as run_services
from tests.conftest import REPO_DIR
from tests.support.items import import_items

SAMPLE_DIR = REPO_DIR / "sample_data"


def compute_rows(run: Run) -> Run:
    """The missing or failed rows of a run through the real planner, engine, built-in client and writer, on this thread (the test
    transaction is not visible to the executor's database thread), then the run's status is refreshed."""
    wanted, _, existing = execution._wanted(run, run.item_ids)  # as a resume: rows done without error are kept
    jobs = JobPlanner.for_run(run).jobs(wanted)
    found = []
    engine = Engine(method=get_method(run.method), client=execution.make_client(run.endpoint, seed=run.seed),
                    k=run.k, concurrency=8)
    asyncio.run(engine.run(jobs, on_result=found.append))
    execution._write(run, found, run.endpoint.model, existing)
    execution.refresh_status(run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def compute():
    return compute_rows


@pytest.fixture
def sample_items(transactional_db):
    import_items(SAMPLE_DIR / "test.jsonl", split="test")
    return list(Item.objects.filter(split="test").order_by("pk"))


@pytest.fixture
def free_text_run(sample_items):
    """A free-text run of the built-in lexical model; answer i is "Answer number i: <option text>", the gold
    option for even i, the next option for odd i."""
    endpoint = run_services.endpoint_for_cli(builtin="lexical")
    run = run_services.run_launch(endpoint=endpoint, method="free-text", split="test", enqueue=False)
    run_services.run_execute_in_process(run=run)
    results = list(Result.objects.filter(run=run).select_related("item").order_by("item_id"))
    for i, result in enumerate(results):
        item = result.item
        option = item.answer_index if i % 2 == 0 else (item.answer_index + 1) % len(item.options)
        result.free_answer = f"Answer number {i}: {item.options[option]}"
    Result.objects.bulk_update(results, ["free_answer"])
    return run


@pytest.fixture
def api(researcher):
    """A researcher's API client with a token (as a script would call), answering errors instead of raising."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client
