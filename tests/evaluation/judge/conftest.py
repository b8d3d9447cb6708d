"""Fixtures of the judge tests: the sample items and a free-text run over them with known, distinct answers."""
from __future__ import annotations

import pytest

from annotation.models import Item
from evaluation.models import Result
from evaluation.services import runs as services
from tests.conftest import REPO_DIR
from tests.support.items import import_items

SAMPLE_DIR = REPO_DIR / "sample_data"


@pytest.fixture
def sample_items(transactional_db):
    import_items(SAMPLE_DIR / "test.jsonl", split="test")
    return list(Item.objects.filter(split="test").order_by("pk"))


@pytest.fixture
def free_text_run(sample_items):
    """A free-text run of the built-in lexical model; answer i is "Answer number i: <option text>", the gold
    option for even i, the next option for odd i."""
    endpoint = services.endpoint_for_cli(builtin="lexical")
    run = services.run_launch(endpoint=endpoint, method="free-text", split="test", enqueue=False)
    services.run_execute_in_process(run=run)
    results = list(Result.objects.filter(run=run).select_related("item").order_by("item_id"))
    for i, result in enumerate(results):
        item = result.item
        option = item.answer_index if i % 2 == 0 else (item.answer_index + 1) % len(item.options)
        result.free_answer = f"Answer number {i}: {item.options[option]}"
    Result.objects.bulk_update(results, ["free_answer"])
    return run
