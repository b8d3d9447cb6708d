"""Question rewriting (annotation.views.rewrite): conflicts, drafts, checks, validation, edits only in the stage."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.forms import MAX_QUESTION
from annotation.models import Draft, ItemRevision, ItemStatus, Stage
from annotation.services import lease_next

from ..workflow_support import api_for, client_for, graph_post, make_items, rewrite_post, set_k

pytestmark = pytest.mark.django_db


def test_two_editors_second_save_is_refused_with_the_conflict_and_nothing_is_lost(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    first, second = client_for(annotator), client_for(annotator2)
    url = reverse("annotation:rewrite", args=[item.pk])
    base = item.version
    assert first.get(url).status_code == 200 and second.get(url).status_code == 200
    r1 = first.post(url, rewrite_post(item, base, question="Who really entered the study?"))
    assert r1.status_code == 302
    r2 = second.post(url, rewrite_post(item, base, question="Who came into the locked study?"))
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
    r3 = second.post(url, rewrite_post(item, item.version, question="Who came into the locked study?"))
    assert r3.status_code == 302
    authors = list(ItemRevision.objects.filter(item=item).order_by("number").values_list("author__username", flat=True))
    assert authors[-2:] == ["ann1", "ann2"]
    assert not Draft.objects.filter(user=annotator2, item=item).exists()


def test_rewrite_checks_options_and_shows_previous_diff(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    bad = annotator_client.post(url, rewrite_post(item, item.version, option_2="The gardener"))
    assert bad.status_code == 400 and "are the same" in bad.content.decode()
    ok = annotator_client.post(url, rewrite_post(item, item.version, option_3="Nobody at all"))
    assert ok.status_code == 302
    page = annotator_client.get(url).content.decode()
    assert "at all</ins>" in page


def test_rewrite_draft_autosaves_and_is_restored(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    response = annotator_client.post(reverse("annotation:rewrite_draft", args=[item.pk]),
                                     rewrite_post(item, item.version, question="Half-typed question"),
                                     HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert "Draft saved" in response.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["question"] == "Half-typed question"
    page = annotator_client.get(reverse("annotation:rewrite", args=[item.pk])).content.decode()
    assert "Restored your unsaved draft" in page and "Half-typed question" in page


def test_rewrite_refuses_missing_and_oversized_fields_by_name(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    missing = annotator_client.post(url, rewrite_post(item, item.version, question=""))
    assert missing.status_code == 400 and "Question: This field is required." in missing.content.decode()
    huge = annotator_client.post(url, rewrite_post(item, item.version, question="x" * (MAX_QUESTION + 1)))
    assert huge.status_code == 400 and f"Question: Ensure this value has at most {MAX_QUESTION}" in huge.content.decode()
    bad = annotator_client.post(url, rewrite_post(item, "abc", answer_index=9))
    page = bad.content.decode()
    assert bad.status_code == 400 and "Base version:" in page and "Correct option:" in page
    item.refresh_from_db()
    assert item.version == 1


def test_rewrite_draft_keeps_unfinished_text_but_refuses_oversized_input(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite_draft", args=[item.pk])
    odd = annotator_client.post(url, rewrite_post(item, item.version, answer_index="x", question=""))
    assert odd.status_code == 200
    assert Draft.objects.get(user=annotator, item=item).data["answer_index"] == item.answer_index
    huge = annotator_client.post(url, rewrite_post(item, item.version, question="y" * (MAX_QUESTION + 1)))
    assert huge.status_code == 422 and "Question: Ensure this value has at most" in huge.content.decode()
    many = annotator_client.post(url, rewrite_post(item, item.version, **{f"option_{i}": f"o{i}" for i in range(12)}))
    assert many.status_code == 422 and "Options: at most 10" in many.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["question"] == ""  # the refused input was not stored


def test_edits_only_in_the_items_stage(annotator, annotator_client):
    (published,) = make_items(1, status=ItemStatus.PUBLISHED)
    response = annotator_client.post(reverse("annotation:rewrite", args=[published.pk]),
                                     rewrite_post(published, published.version, question="Sneaky change?"))
    assert response.status_code == 409 and "cannot be edited here now" in response.content.decode()
    graph = annotator_client.post(reverse("annotation:clue_graph", args=[published.pk]), graph_post(published))
    assert graph.status_code == 409
    api = api_for(annotator).post(f"/api/annotation/items/{published.pk}/clue-graph/", {
        "base_version": published.version, "clues": [{"text": "a", "implication": "b"}],
        "steps": [{"inputs": ["b"], "output": "The gardener"}]}, format="json")
    assert api.status_code == 409
    published.refresh_from_db()
    assert published.version == 1 and published.question.startswith("Who entered")


def test_save_and_finish_is_all_or_nothing(annotator, annotator2):
    set_k(Stage.REWRITE, 1)
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    lease_next(user=annotator2, stage=Stage.REWRITE)  # the only slot is held by someone else
    response = client_for(annotator).post(reverse("annotation:rewrite", args=[item.pk]),
                                       rewrite_post(item, item.version, question="Edited and finished?", finish="1"))
    assert response.status_code == 409
    item.refresh_from_db()
    assert item.version == 1 and item.status == ItemStatus.REWRITE  # the edit was not saved without the finish
