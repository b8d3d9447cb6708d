"""Researchers' pages (annotation.views.researchers): progress, queueing imported items, agreement."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Item, ItemRevision, ItemStatus, Stage

from ..workflow_support import make_items, set_k

pytestmark = pytest.mark.django_db


def test_queueing_imported_items_writes_a_revision_each_in_few_queries(researcher_client, researcher):
    make_items(3, status=ItemStatus.IMPORTED, start=200)
    make_items(40, status=ItemStatus.IMPORTED, start=300, source="other")
    with CaptureQueriesContext(connection) as queries:
        response = researcher_client.post(reverse("annotation:progress"), {"source": "other", "confirm": "1"})
    assert response.status_code == 302
    assert len(queries) <= 12, [q["sql"] for q in queries.captured_queries]  # bulk, not one query per item
    moved = Item.objects.filter(source="other")
    assert set(moved.values_list("status", flat=True)) == {ItemStatus.VERIFICATION}
    assert set(moved.values_list("version", flat=True)) == {2}
    revisions = ItemRevision.objects.filter(item__source="other", number=2)
    assert revisions.count() == 40
    revision = revisions.select_related("item").first()
    assert revision.author == researcher and revision.changed_fields == ["status"]
    assert revision.snapshot == revision.item.content() and revision.note == "queued for verification"
    assert set(Item.objects.filter(source="t").values_list("status", flat=True)) == {ItemStatus.IMPORTED}


def test_researcher_pages_render(researcher_client, researcher, annotator):
    from annotation.services import lease_next

    set_k(Stage.VERIFICATION, 1)
    make_items(3)
    make_items(2, status=ItemStatus.IMPORTED, start=50)
    lease_next(user=annotator, stage=Stage.VERIFICATION)
    board = researcher_client.get(reverse("annotation:progress")).content.decode()
    assert "ann1" in board and "Leases held now" in board
    assert researcher_client.post(reverse("annotation:progress"), {"split": "test", "confirm": "1"}).status_code == 302
    assert Item.objects.filter(status=ItemStatus.VERIFICATION).count() == 5
    home = researcher_client.get("/").content.decode()
    assert reverse("annotation:progress") in home and reverse("annotation:queue") in home
