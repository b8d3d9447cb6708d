"""Fixtures shared by the annotation tests (users and clients come from tests/conftest.py)."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import Adjudication, Item, ItemStatus, Stage
from annotation.services.belief import belief_queue_for

from .workflow_support import make_items


@pytest.fixture
def real_items(db, detectbench_dir):
    """The real DetectBench test split (1,196 items), all in the clue-graph stage."""
    call_command("import_items", str(detectbench_dir / "test.jsonl"), "--split", "test", stdout=io.StringIO())
    Item.objects.update(status=ItemStatus.CLUE_GRAPH)
    return Item.objects.order_by("pk")


@pytest.fixture
def world(annotator):
    """One item in verification, an open adjudication on it and a belief queue (every URL has something to show)."""
    (item,) = make_items(1)
    belief_queue_for(name="judge-a")
    adjudication = Adjudication.objects.create(item=item, stage=Stage.VERIFICATION)
    return item, adjudication
