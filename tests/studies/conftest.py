"""Fixtures for the studies tests: real DetectBench items, studies, started attempts."""
from __future__ import annotations

import itertools

import pytest

from annotation.models import Item
from studies.models import StudyStatus
from studies.services import attempt_start, study_create, study_join
from tests.support.items import import_items as import_records

_counter = itertools.count()


def import_items(data_dir, n: int, *, split: str = "test") -> list[int]:
    """Import the first n records of the real test split; return their ids in file order."""
    import_records(data_dir / "test.jsonl", split=split, limit=n)
    return list(Item.objects.filter(split=split).order_by("id").values_list("id", flat=True))[:n]


@pytest.fixture
def items(db, detectbench_dir):
    """Factory: n real items (imported once per test)."""
    cache: dict[int, list[int]] = {}

    def make(n: int = 20) -> list[int]:
        if n not in cache:
            cache[n] = import_items(detectbench_dir, n)
        return cache[n]

    return make


@pytest.fixture
def make_study(items):
    def make(*, n_items: int = 10, per_participant: int = 3, raters: int = 2, time_limit_seconds: int = 600,
             status: str = StudyStatus.OPEN, **fields):
        ids = items(n_items)
        return study_create(
            slug=fields.pop("slug", f"study-{next(_counter)}"), item_ids=ids, per_participant=per_participant,
            raters=raters, time_limit_seconds=time_limit_seconds, status=status,
            completion_code=fields.pop("completion_code", "CODE-1234"), **fields,
        )

    return make


def started_attempt(study, pid: str = ""):
    attempt = study_join(study=study, participant_id=pid or f"p{next(_counter)}")
    return attempt_start(attempt_id=attempt.pk)
