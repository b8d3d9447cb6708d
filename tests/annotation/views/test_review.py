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


def _to_review(a, item):
    """The clue graph of `item` finished by client `a`: the item is in review."""
    data = graph_post(item)
    data["finish"] = "1"
    assert a.post(reverse("annotation:clue_graph", args=[item.pk]), data).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REVIEW


def _send_back(b, item, stage: str, comment: str):
    b.post(reverse("annotation:next_item", args=["review"]))
    response = b.post(reverse("annotation:review", args=[item.pk]),
                      {"action": "send_back", "send_back_to": stage, "comment": comment, "item_version": item.version})
    assert response.status_code == 302
    item.refresh_from_db()


def test_a_send_back_comment_and_its_reviewer_are_shown_where_the_fix_happens_until_it_is_resolved(
        annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    a, b = client_for(annotator), client_for(annotator2)
    clue_graph_url = reverse("annotation:clue_graph", args=[item.pk])
    assert 'id="sent-back"' not in a.get(clue_graph_url).content.decode()
    _to_review(a, item)
    _send_back(b, item, "clue_graph", "Clue 3 is not in the story: pick its words in the context.")
    assert item.status == ItemStatus.CLUE_GRAPH

    page = a.get(clue_graph_url).content.decode()
    assert 'id="sent-back"' in page and "sent-back-mark" in page
    assert "Clue 3 is not in the story: pick its words in the context." in page
    assert "ann2 sent this item back to “Clue-graph construction”" in page
    # The queue marks the item the annotator holds as sent back.
    a.post(reverse("annotation:next_item", args=["clue_graph"]))
    queue = a.get(reverse("annotation:queue")).content.decode()
    assert "sent-back-mark" in queue

    # Finished again: back in review, the note is resolved and gone.
    _to_review(a, item)
    assert 'id="sent-back"' not in a.get(clue_graph_url).content.decode()
    assert 'id="sent-back"' not in b.get(reverse("annotation:review", args=[item.pk])).content.decode()


def test_sent_back_to_rewriting_the_comment_is_on_the_rewrite_screen_and_the_clue_graph_screen_after_it(
        annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    a, b = client_for(annotator), client_for(annotator2)
    _to_review(a, item)
    _send_back(b, item, "rewrite", "Option 4 is not a decent distractor (rule 2.4).")
    assert item.status == ItemStatus.REWRITE
    page = a.get(reverse("annotation:rewrite", args=[item.pk])).content.decode()
    assert "Option 4 is not a decent distractor (rule 2.4)." in page and "ann2" in page
    a.post(reverse("annotation:rewrite", args=[item.pk]), rewrite_post(item, item.version, finish="1"))
    item.refresh_from_db()
    assert item.status == ItemStatus.CLUE_GRAPH  # the clue graph is redone too: the note is still there
    assert "Option 4 is not a decent distractor" in a.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    _to_review(a, item)
    assert "Option 4 is not a decent distractor" not in a.get(reverse("annotation:rewrite", args=[item.pk])).content.decode()
