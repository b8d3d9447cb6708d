"""Review (annotation.views.review): finishing the editing stages, approve publishes, send back supersedes."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, ItemStatus

from ..workflow_support import client_for, graph_post, make_items, rewrite_post

pytestmark = pytest.mark.django_db


def test_rewrite_and_clue_graph_finish_move_the_item_on_and_review_publishes(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    a = client_for(annotator)
    a.post(reverse("annotation:rewrite", args=[item.pk]), rewrite_post(item, item.version, finish="1"))
    item.refresh_from_db()
    assert item.status == ItemStatus.CLUE_GRAPH
    page = a.get(reverse("annotation:clue_graph", args=[item.pk]))
    assert page.status_code == 200
    data = graph_post(item)
    data["finish"] = "1"
    assert a.post(reverse("annotation:clue_graph", args=[item.pk]), data).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REVIEW
    # The clue-graph author cannot review; a second annotator can.
    assert a.post(reverse("annotation:next_item", args=["review"]))["Location"] == reverse("annotation:queue")
    b = client_for(annotator2)
    assert b.post(reverse("annotation:next_item", args=["review"]))["Location"] == reverse("annotation:review",
                                                                                        args=[item.pk])
    assert "<svg" in b.get(reverse("annotation:review", args=[item.pk])).content.decode()
    sent = b.post(reverse("annotation:review", args=[item.pk]),
                  {"action": "send_back", "send_back_to": "clue_graph", "comment": "", "item_version": item.version})
    assert sent.status_code == 400  # a comment is required
    b.post(reverse("annotation:review", args=[item.pk]),
           {"action": "send_back", "send_back_to": "clue_graph", "comment": "clue 3 is not in the story",
            "item_version": item.version})
    item.refresh_from_db()
    assert item.status == ItemStatus.CLUE_GRAPH
    assert "clue 3 is not in the story" in item.revisions.order_by("-number").first().note
    data = graph_post(item)
    data["finish"] = "1"
    a.post(reverse("annotation:clue_graph", args=[item.pk]), data)
    item.refresh_from_db()
    assert item.status == ItemStatus.REVIEW
    assert b.post(reverse("annotation:review", args=[item.pk]),
                  {"action": "approve", "item_version": item.version}).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.PUBLISHED
    assert AnnotatorLease.objects.filter(item=item, status=AnnotatorLeaseStatus.SUPERSEDED).exists()
