"""Server-side validation of every workflow form and API input: bad values give a clear message naming the
field (400/409/422), never a 500; edits only in the item's stage; "save and finish" is all or nothing."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.forms import MAX_GRAPH_TEXT, MAX_QUESTION
from annotation.models import Adjudication, Draft, ItemStatus, Stage, VerificationDecision
from annotation.services import lease_next

from .test_workflow_pages import _graph_post, _rewrite_post
from .workflow_support import make_items, set_k

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_rewrite_refuses_missing_and_oversized_fields_by_name(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    missing = annotator_client.post(url, _rewrite_post(item, item.version, question=""))
    assert missing.status_code == 400 and "Question: This field is required." in missing.content.decode()
    huge = annotator_client.post(url, _rewrite_post(item, item.version, question="x" * (MAX_QUESTION + 1)))
    assert huge.status_code == 400 and f"Question: Ensure this value has at most {MAX_QUESTION}" in huge.content.decode()
    bad = annotator_client.post(url, _rewrite_post(item, "abc", answer_index=9))
    page = bad.content.decode()
    assert bad.status_code == 400 and "Base version:" in page and "Correct option:" in page
    item.refresh_from_db()
    assert item.version == 1


def test_rewrite_draft_keeps_unfinished_text_but_refuses_oversized_input(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite_draft", args=[item.pk])
    odd = annotator_client.post(url, _rewrite_post(item, item.version, answer_index="x", question=""))
    assert odd.status_code == 200
    assert Draft.objects.get(user=annotator, item=item).data["answer_index"] == item.answer_index
    huge = annotator_client.post(url, _rewrite_post(item, item.version, question="y" * (MAX_QUESTION + 1)))
    assert huge.status_code == 422 and "Question: Ensure this value has at most" in huge.content.decode()
    many = annotator_client.post(url, _rewrite_post(item, item.version, **{f"option_{i}": f"o{i}" for i in range(12)}))
    assert many.status_code == 422 and "Options: at most 10" in many.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["question"] == ""  # the refused input was not stored


def test_clue_graph_page_refuses_damaged_input_and_keeps_the_text(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    url = reverse("annotation:clue_graph", args=[item.pk])
    for meta in ("{not json", json.dumps({"evidence_steps": [[1, 2, 3]]}), json.dumps({"clues": 5}), "[]"):
        data = _graph_post(item)
        data["meta"] = meta
        response = annotator_client.post(url, data)
        if meta == json.dumps({"clues": 5}):  # unknown keys are ignored
            assert response.status_code == 302
            item.refresh_from_db()
            continue
        assert response.status_code == 400, meta
        assert "hidden state is damaged" in response.content.decode()
    data = _graph_post(item)
    data["base_version"] = "abc"
    assert annotator_client.post(url, data).status_code == 400
    data = _graph_post(item)
    data["clue_text"][0] = "z" * (MAX_GRAPH_TEXT + 1)
    data["step_output"][0] = "w" * (MAX_GRAPH_TEXT + 5)
    response = annotator_client.post(url, data)
    page = response.content.decode()
    assert response.status_code == 400
    assert f"Clue 1: at most {MAX_GRAPH_TEXT} characters" in page and "Conclusion of step S1" in page
    assert "z" * (MAX_GRAPH_TEXT + 1) in page  # the annotator's text is still in the editor
    version = item.version
    item.refresh_from_db()
    assert item.version == version


def test_clue_graph_htmx_calls_refuse_bad_input_without_500(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    preview = reverse("annotation:clue_graph_preview", args=[item.pk])
    edit = reverse("annotation:clue_graph_edit", args=[item.pk])
    data = _graph_post(item)
    data["clue_implication"][1] = "i" * (MAX_GRAPH_TEXT + 1)
    for url in (preview, edit):
        response = annotator_client.post(url, data, HTTP_HX_REQUEST="true")
        assert response.status_code == 422 and response["HX-Retarget"] == "#cg-preview"
        assert "Implication of clue 2: at most" in response.content.decode()
    data = _graph_post(item)
    del data["base_version"]
    assert "Base version: This field is required." in annotator_client.post(preview, data).content.decode()
    assert not Draft.objects.filter(item=item).exists()  # no draft without the version it started from
    for action, extra in (("fix:a:b", {}), ("fix:1", {}), ("select", {"fix_clue": "", "fix_start": "x"}),
                          ("select", {"fix_clue": "7", "fix_start": "0", "fix_end": "4"}), ("remove_clue:99", {})):
        response = annotator_client.post(edit, {**_graph_post(item), "action": action, **extra})
        assert response.status_code == 200, action
    assert "pick the text again" in annotator_client.post(edit, {**_graph_post(item), "action": "fix:a:b"}).content.decode()


def test_verification_review_and_adjudication_forms_name_the_bad_field(annotator, annotator2, django_user_model):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    a = _client(annotator)
    url = reverse("annotation:verify", args=[item.pk])
    for data, message in (({"decision": "maybe", "item_version": 1}, "Decision: Select a valid choice."),
                          ({"decision": "delete", "criteria": ["nope"], "item_version": 1}, "Criteria: Select a valid"),
                          ({"decision": "keep", "item_version": "v1"}, "Item version: Enter a whole number."),
                          ({"decision": "keep", "item_version": 1, "comment": "c" * 5001}, "Comment: Ensure this")):
        response = a.post(url, data)
        assert response.status_code == 400 and message in response.content.decode(), data
    assert not VerificationDecision.objects.exists()
    # A decision on a version the annotator did not see is refused.
    stale = a.post(url, {"decision": "keep", "item_version": item.version + 5})
    assert stale.status_code == 409 and "changed" in stale.content.decode()

    (review_item,) = make_items(1, status=ItemStatus.REVIEW, start=20)
    review = reverse("annotation:review", args=[review_item.pk])
    for data in ({"action": "publish", "item_version": 1}, {"action": "send_back", "send_back_to": "published",
                                                           "comment": "x", "item_version": 1}):
        response = _client(annotator2).post(review, data)
        assert response.status_code == 400 and ("Action:" in response.content.decode()
                                                or "Send back to:" in response.content.decode())
    adjudication = Adjudication.objects.create(item=item, stage=Stage.VERIFICATION)
    third = django_user_model.objects.create_user("ann3")
    third.groups.add(*annotator.groups.all())
    response = _client(third).post(reverse("annotation:adjudication", args=[adjudication.pk]), {"decision": "maybe"})
    assert response.status_code == 400 and "Decision: Select a valid choice." in response.content.decode()


def test_edits_only_in_the_items_stage(annotator, annotator_client):
    (published,) = make_items(1, status=ItemStatus.PUBLISHED)
    response = annotator_client.post(reverse("annotation:rewrite", args=[published.pk]),
                                     _rewrite_post(published, published.version, question="Sneaky change?"))
    assert response.status_code == 409 and "cannot be edited here now" in response.content.decode()
    graph = annotator_client.post(reverse("annotation:clue_graph", args=[published.pk]), _graph_post(published))
    assert graph.status_code == 409
    api = _api(annotator).post(f"/api/annotation/items/{published.pk}/clue-graph/", {
        "base_version": published.version, "clues": [{"text": "a", "implication": "b"}],
        "steps": [{"inputs": ["b"], "output": "The gardener"}]}, format="json")
    assert api.status_code == 409
    published.refresh_from_db()
    assert published.version == 1 and published.question.startswith("Who entered")


def test_save_and_finish_is_all_or_nothing(annotator, annotator2):
    set_k(Stage.REWRITE, 1)
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    lease_next(user=annotator2, stage=Stage.REWRITE)  # the only slot is held by someone else
    response = _client(annotator).post(reverse("annotation:rewrite", args=[item.pk]),
                                       _rewrite_post(item, item.version, question="Edited and finished?", finish="1"))
    assert response.status_code == 409
    item.refresh_from_db()
    assert item.version == 1 and item.status == ItemStatus.REWRITE  # the edit was not saved without the finish


def test_api_names_oversized_fields_and_refuses_stale_verification(annotator):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    (graph_item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, start=30)
    api = _api(annotator)
    big = api.post(f"/api/annotation/items/{graph_item.pk}/clue-graph/", {
        "base_version": 1, "clues": [{"text": "t" * (MAX_GRAPH_TEXT + 1), "implication": ""}], "steps": []},
        format="json")
    assert big.status_code == 400 and "clues" in big.json()
    stale = api.post(f"/api/annotation/items/{item.pk}/verification/", {"decision": "keep", "item_version": 7},
                     format="json")
    assert stale.status_code == 409 and stale.json()["current_version"] == 1
    long_comment = api.post(f"/api/annotation/items/{item.pk}/verification/",
                            {"decision": "keep", "item_version": 1, "comment": "c" * 5001}, format="json")
    assert long_comment.status_code == 400 and "comment" in long_comment.json()
