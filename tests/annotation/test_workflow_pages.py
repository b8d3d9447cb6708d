"""Workflow pages: verification with k annotators and adjudication, rewrite with conflicts and drafts,
history and revert, review, queue query counts."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import (
    Adjudication, AnnotatorLease, AnnotatorLeaseStatus, Draft, Item, ItemRevision, ItemStatus, Stage, VerificationDecision,
)

from .workflow_support import make_items, set_k

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _verify(client, item, decision, criteria=(), comment=""):
    return client.post(reverse("annotation:verify", args=[item.pk]),
                       {"decision": decision, "criteria": list(criteria), "comment": comment,
                        "item_version": item.version})


def test_queue_next_item_leads_to_the_stage_screen_and_page_renders(annotator_client):
    set_k(Stage.VERIFICATION, 1)
    item, _ = make_items(2)
    response = annotator_client.post(reverse("annotation:next_item", args=["verification"]))
    assert response.status_code == 302 and response["Location"] == reverse("annotation:verify", args=[item.pk])
    page = annotator_client.get(response["Location"]).content.decode()
    for key in ('data-key="k"', 'data-key="d"', 'data-key="n"', 'data-key="1"', 'data-key="5"'):
        assert key in page
    assert "1.4 The answer is not correct" in page and "1.5 Discrimination or bias" in page


def test_queue_page_query_count_does_not_grow(annotator_client, annotator):
    set_k(Stage.VERIFICATION, 1)
    make_items(3)
    url = reverse("annotation:queue")
    annotator_client.post(reverse("annotation:next_item", args=["verification"]))
    annotator_client.get(url)
    with CaptureQueriesContext(connection) as small:
        assert annotator_client.get(url).status_code == 200
    make_items(30, start=100)
    for stage in (Stage.REWRITE, Stage.CLUE_GRAPH):
        AnnotatorLease.objects.create(item=Item.objects.filter(status="verification").last(), stage=stage,
                                  annotator=annotator, leased_at="2030-01-01T00:00Z", expires_at="2030-01-01T01:00Z")
    with CaptureQueriesContext(connection) as large:
        annotator_client.get(url)
    assert len(large) == len(small) <= 12, [q["sql"] for q in large.captured_queries]
    # The next-item hand-out itself is a fixed number of queries too.
    with CaptureQueriesContext(connection) as hand_out:
        annotator_client.post(reverse("annotation:next_item", args=["verification"]))
    assert len(hand_out) <= 16


def test_two_verifiers_agreeing_keep_move_the_item_to_rewrite(annotator, annotator2):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    assert _verify(_client(annotator), item, "keep").status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.VERIFICATION  # waits for the second annotator
    assert _verify(_client(annotator2), item, "keep").status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REWRITE
    assert "kept by ann1, ann2" in item.revisions.order_by("-number").first().note


def test_two_verifiers_agreeing_delete_reject_with_the_criteria(annotator, annotator2):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    _verify(_client(annotator), item, "delete", ["wrong_answer"])
    _verify(_client(annotator2), item, "delete", ["bias", "wrong_answer"])
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED
    assert "bias, wrong_answer" in item.revisions.order_by("-number").first().note


def test_disagreement_goes_to_adjudication(annotator, annotator2, researcher, django_user_model):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    _verify(_client(annotator), item, "keep")
    _verify(_client(annotator2), item, "delete", ["heavy_math"])
    adjudication = Adjudication.objects.get(item=item, status="open")
    item.refresh_from_db()
    assert item.status == ItemStatus.VERIFICATION
    listing = _client(annotator).get(reverse("annotation:adjudication_list")).content.decode()
    assert str(item) in listing
    # One of the two who disagreed may not settle it.
    refused = _client(annotator).post(reverse("annotation:adjudication", args=[adjudication.pk]), {"decision": "keep"})
    assert refused.status_code == 409
    third = django_user_model.objects.create_user("ann3")
    third.groups.add(*annotator.groups.all())
    page = _client(third).get(reverse("annotation:adjudication", args=[adjudication.pk])).content.decode()
    assert "heavy_math" in page
    assert _client(third).post(reverse("annotation:adjudication", args=[adjudication.pk]),
                               {"decision": "delete", "comment": "needs algebra"}).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED


def test_verification_form_refuses_inconsistent_decisions(annotator_client):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    assert _verify(annotator_client, item, "delete").status_code == 400  # no criterion
    assert _verify(annotator_client, item, "keep", ["bias"]).status_code == 400
    assert not VerificationDecision.objects.exists()
    assert _verify(annotator_client, item, "keep").status_code == 302
    assert _verify(annotator_client, item, "keep").status_code == 409  # twice: refused


def _rewrite_post(item, base_version, **over):
    data = {"context": item.context, "question": item.question, "answer_index": item.answer_index,
            "base_version": base_version}
    for i, option in enumerate(item.options):
        data[f"option_{i}"] = option
    data.update(over)
    return data


def test_two_editors_second_save_is_refused_with_the_conflict_and_nothing_is_lost(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    first, second = _client(annotator), _client(annotator2)
    url = reverse("annotation:rewrite", args=[item.pk])
    base = item.version
    assert first.get(url).status_code == 200 and second.get(url).status_code == 200
    r1 = first.post(url, _rewrite_post(item, base, question="Who really entered the study?"))
    assert r1.status_code == 302
    r2 = second.post(url, _rewrite_post(item, base, question="Who came into the locked study?"))
    assert r2.status_code == 409
    page = r2.content.decode()
    assert "someone else changed this item" in page and "ann1" in page
    assert "<ins> really</ins>" in page  # the other person's change, as a diff
    assert "Who came into the locked study?" in page  # the refused text is still in the form
    draft = Draft.objects.get(user=annotator2, item=item, stage=Stage.REWRITE)
    assert draft.data["question"] == "Who came into the locked study?" and draft.base_version == base
    item.refresh_from_db()
    assert item.question == "Who really entered the study?"
    # After looking at the conflict the second editor saves on top of the new version.
    assert f'name="base_version" value="{item.version}"' in page
    r3 = second.post(url, _rewrite_post(item, item.version, question="Who came into the locked study?"))
    assert r3.status_code == 302
    authors = list(ItemRevision.objects.filter(item=item).order_by("number").values_list("author__username", flat=True))
    assert authors[-2:] == ["ann1", "ann2"]
    assert not Draft.objects.filter(user=annotator2, item=item).exists()


def test_rewrite_checks_options_and_shows_previous_diff(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    bad = annotator_client.post(url, _rewrite_post(item, item.version, option_2="The gardener"))
    assert bad.status_code == 400 and "are the same" in bad.content.decode()
    ok = annotator_client.post(url, _rewrite_post(item, item.version, option_3="Nobody at all"))
    assert ok.status_code == 302
    page = annotator_client.get(url).content.decode()
    assert "at all</ins>" in page


def test_rewrite_draft_autosaves_and_is_restored(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    response = annotator_client.post(reverse("annotation:rewrite_draft", args=[item.pk]),
                                     _rewrite_post(item, item.version, question="Half-typed question"),
                                     HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert "Draft saved" in response.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["question"] == "Half-typed question"
    page = annotator_client.get(reverse("annotation:rewrite", args=[item.pk])).content.decode()
    assert "Restored your unsaved draft" in page and "Half-typed question" in page


def test_history_shows_diffs_and_revert_is_a_new_revision(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    annotator_client.post(url, _rewrite_post(item, item.version, question="Changed question?"))
    item.refresh_from_db()
    history = annotator_client.get(reverse("annotation:history", args=[item.pk])).content.decode()
    assert "<ins>Changed</ins>" in history or "Changed" in history
    stale = annotator_client.post(reverse("annotation:revert", args=[item.pk]), {"revision": 1, "base_version": 1})
    assert stale.status_code == 409
    ok = annotator_client.post(reverse("annotation:revert", args=[item.pk]),
                               {"revision": 1, "base_version": item.version})
    assert ok.status_code == 302
    item.refresh_from_db()
    assert item.version == 3 and item.question.startswith("Who entered the study?")
    assert ItemRevision.objects.filter(item=item).count() == 3
    assert "reverted to revision 1" in ItemRevision.objects.get(item=item, number=3).note


def test_rewrite_and_clue_graph_finish_move_the_item_on_and_review_publishes(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    a = _client(annotator)
    a.post(reverse("annotation:rewrite", args=[item.pk]), _rewrite_post(item, item.version, finish="1"))
    item.refresh_from_db()
    assert item.status == ItemStatus.CLUE_GRAPH
    page = a.get(reverse("annotation:clue_graph", args=[item.pk]))
    assert page.status_code == 200
    data = _graph_post(item)
    data["finish"] = "1"
    assert a.post(reverse("annotation:clue_graph", args=[item.pk]), data).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REVIEW
    # The clue-graph author cannot review; a second annotator can.
    assert a.post(reverse("annotation:next_item", args=["review"]))["Location"] == reverse("annotation:queue")
    b = _client(annotator2)
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
    data = _graph_post(item)
    data["finish"] = "1"
    a.post(reverse("annotation:clue_graph", args=[item.pk]), data)
    item.refresh_from_db()
    assert item.status == ItemStatus.REVIEW
    assert b.post(reverse("annotation:review", args=[item.pk]),
                  {"action": "approve", "item_version": item.version}).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.PUBLISHED
    assert AnnotatorLease.objects.filter(item=item, status=AnnotatorLeaseStatus.SUPERSEDED).exists()


def _graph_post(item) -> dict:
    from annotation.clue_graph.editing import editable_graph
    from annotation.views.clue_graph import _graph_meta

    graph = editable_graph(item.evidence, item.reasoning)
    data = {"base_version": item.version, "meta": _graph_meta(graph),
            "clue_text": [t for t, _ in graph.clues], "clue_implication": [i for _, i in graph.clues],
            "step_output": [s.output for s in graph.steps], "step_header": [s.header or "" for s in graph.steps]}
    for i, step in enumerate(graph.steps):
        data[f"step_{i}_inputs"] = step.inputs
    return data


def test_queueing_imported_items_writes_a_revision_each_in_few_queries(researcher_client, researcher):
    make_items(3, status=ItemStatus.IMPORTED, start=200)
    make_items(40, status=ItemStatus.IMPORTED, start=300, source="other")
    with CaptureQueriesContext(connection) as queries:
        response = researcher_client.post(reverse("annotation:progress"), {"source": "other"})
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
