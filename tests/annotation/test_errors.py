"""Every refusal of an annotation service (annotation.errors) reaches the user with its own status, on a page
and in the API, never as a 500 (the test client re-raises any exception a view lets through)."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.errors import ITEM_API_FIELDS, ImportRejected, NoSlot, StaleVersion, WorkflowError
from annotation.models import Adjudication, AdjudicationStatus, ItemStatus, Stage
from annotation.services import lease_next, stage_submit

from .workflow_support import api_for, client_for, make_items, rewrite_post, set_k, verify_post

pytestmark = pytest.mark.django_db


def test_the_refusals_carry_their_status_and_code():
    assert (NoSlot("x").http_status, NoSlot("x").code, isinstance(NoSlot("x"), WorkflowError)) == (409, "no_slot", True)
    assert (WorkflowError("x").http_status, ImportRejected([]).http_status) == (409, 400)
    (item,) = make_items(1)
    body = StaleVersion(item, base_version=item.version - 1 or 1).as_dict()
    assert body["code"] == "stale_version" and body["current_version"] == item.version
    assert sorted(body["current"]) == sorted(ITEM_API_FIELDS) and body["current"]["id"] == item.pk


# ---- pages: (what is refused, the response) -> status and the message shown


def test_pages_show_each_refusal_with_its_status(annotator, annotator2, researcher, django_user_model):
    set_k(Stage.VERIFICATION, 1)
    set_k(Stage.REWRITE, 1)
    verifying, published, rewriting, reviewing = (
        make_items(1, start=1)[0], make_items(1, start=2, status=ItemStatus.PUBLISHED)[0],
        make_items(1, start=3, status=ItemStatus.REWRITE)[0], make_items(1, start=4, status=ItemStatus.CLUE_GRAPH)[0])
    first, second = client_for(annotator), client_for(annotator2)
    assert lease_next(user=annotator2, stage=Stage.REWRITE).item_id == rewriting.pk  # the only rewrite slot
    assert verify_post(first, verifying, "keep").status_code == 302
    verifying.refresh_from_db()
    cases = []
    # A repeated decision (k = 2: the item waits for the second annotator).
    set_k(Stage.VERIFICATION, 2)
    twice = make_items(1, start=6)[0]
    verify_post(first, twice, "keep")
    # The page no longer offers a second decision: a stale tab's repeat is answered with the decision made
    # (read-only, nothing changed), not a refusal; the service itself still refuses it (the API case below).
    repeat = verify_post(first, twice, "keep")
    assert repeat.status_code == 302
    assert "already decided" in first.get(repeat["Location"]).content.decode()
    # NoSlot: the item is not in verification.
    cases.append((verify_post(first, published, "keep"), 409, "is in published"))
    # StaleVersion on a decision: the annotator saw an older version.
    stale = second.post(reverse("annotation:verify", args=[twice.pk]),
                        {"decision": "keep", "item_version": twice.version + 3})
    cases.append((stale, 409, "changed"))
    # WorkflowError on an edit outside the item's stage.
    # (A refused save redirects back to the page, post/redirect/get, which shows the reason.)
    cases.append((first.post(reverse("annotation:rewrite", args=[published.pk]),
                             rewrite_post(published, published.version, question="Changed?"), follow=True),
                  200, "cannot be edited here now"))
    # NoSlot on "save and finish" while someone else holds the only slot.
    cases.append((first.post(reverse("annotation:rewrite", args=[rewriting.pk]),
                             rewrite_post(rewriting, rewriting.version, question="Finished?", finish="1"), follow=True),
                  200, "already has 1 annotator"))
    # NoSlot: the reviewer built the clue graph.
    stage_submit(item_id=reviewing.pk, user=annotator, stage=Stage.CLUE_GRAPH, item_version=reviewing.version)
    reviewing.refresh_from_db()
    cases.append((first.post(reverse("annotation:review", args=[reviewing.pk]),
                             {"action": "approve", "item_version": reviewing.version}),
                  409, "must not review an item whose clue graph they built"))
    # WorkflowError: an adjudication already resolved.
    resolved = Adjudication.objects.create(item=published, stage=Stage.VERIFICATION,
                                           status=AdjudicationStatus.RESOLVED, decision="keep")
    third = django_user_model.objects.create_user("ann3")
    third.groups.add(*annotator.groups.all())
    cases.append((client_for(third).post(reverse("annotation:adjudication", args=[resolved.pk]), {"decision": "keep"}),
                  409, "already been resolved"))
    # NotFound: a revision the item does not have.
    cases.append((first.post(reverse("annotation:revert", args=[verifying.pk]),
                             {"revision": 99, "base_version": verifying.version}), 404, "has no revision 99"))
    # ImportRejected: invalid lines, nothing imported.
    cases.append((client_for(researcher).post(reverse("annotation:item_import"), {
        "file": SimpleUploadedFile("bad.jsonl", b'{"id": 1}\n'), "source": "up", "split": "dev"}),
        400, "nothing was imported"))
    for response, status, text in cases:
        assert response.status_code == status, (text, response.status_code)
        assert text in response.content.decode(), text


# ---- API: the same refusals as JSON with their status and code


def test_api_answers_each_refusal_with_its_status_and_code(annotator, annotator2):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    (published,) = make_items(1, start=10, status=ItemStatus.PUBLISHED)
    (graph_item,) = make_items(1, start=20, status=ItemStatus.CLUE_GRAPH)
    api = api_for(annotator)
    verification = f"/api/annotation/items/{item.pk}/verification/"

    inconsistent = api.post(verification, {"decision": "keep", "criteria": ["bias"], "item_version": 1}, format="json")
    assert inconsistent.status_code == 400 and inconsistent.json()["code"] == "invalid"
    assert inconsistent.json()["field"] == "criteria"

    assert api.post(verification, {"decision": "keep", "item_version": 1}, format="json").status_code == 201
    twice = api.post(verification, {"decision": "keep", "item_version": 1}, format="json")
    assert twice.status_code == 409 and twice.json()["code"] == "workflow"

    not_in_stage = api.post(f"/api/annotation/items/{published.pk}/verification/",
                            {"decision": "keep", "item_version": 1}, format="json")
    assert not_in_stage.status_code == 409 and not_in_stage.json()["code"] == "no_slot"

    stale = api_for(annotator2).post(verification, {"decision": "keep", "item_version": 5}, format="json")
    body = stale.json()
    assert stale.status_code == 409 and body["code"] == "stale_version"
    assert body["current_version"] == 1 and body["current"]["id"] == item.pk and body["current"]["status"] == "verification"

    graph = {"base_version": 1, "clues": [{"text": "a", "implication": "b"}],
             "steps": [{"inputs": ["b"], "output": "The gardener"}]}
    outside = api.post(f"/api/annotation/items/{published.pk}/clue-graph/", graph, format="json")
    assert outside.status_code == 409 and outside.json()["code"] == "workflow"
    stale_graph = api.post(f"/api/annotation/items/{graph_item.pk}/clue-graph/", {**graph, "base_version": 4},
                           format="json")
    assert stale_graph.status_code == 409 and stale_graph.json()["current"]["evidence"] == graph_item.evidence

    missing = api.post("/api/annotation/items/999999/verification/", {"decision": "keep", "item_version": 1},
                       format="json")
    assert missing.status_code == 404
    assert api.post("/api/annotation/next/", {"stage": "published"}, format="json").status_code == 400
