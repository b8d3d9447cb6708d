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


# The belief-review tests' fixtures (judge labels are recorded into these with tests/annotation/belief_support.py).
@pytest.fixture
def items(db):
    """Five published items for the judge's labels."""
    return make_items(5, status=ItemStatus.PUBLISHED)


@pytest.fixture
def queue(db):
    """A sighted belief queue in triage order with a random share of 20%."""
    return belief_queue_for(name="judge-a", order="triage", random_share=0.2, blind=False)  # sighted review


@pytest.fixture
def screening_queue(db):
    """A sighted queue of screening labels: suggestions are shown only outside blind review."""
    return belief_queue_for(name="screen", blind=False)


@pytest.fixture
def to_verify(db):
    """Three items in verification."""
    return make_items(3, status=ItemStatus.VERIFICATION, source="v")
