"""Verification with k annotators and adjudication (annotation.views.verification); the judge's screening
suggestion on the screen: shown with its belief, and accepted (judge-accepted, per label)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Adjudication, BeliefLabel, BeliefReview, ItemStatus, Stage, VerificationDecision
from annotation.services.belief import belief_labels_record
from tests.annotation.belief_support import DELETE_FOR_MATH, screening_rows
from tests.support.page_text import visible_text

from ..workflow_support import client_for, make_items, set_k, verify_post

pytestmark = pytest.mark.django_db


def test_two_verifiers_agreeing_keep_move_the_item_to_rewrite(annotator, annotator2):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    assert verify_post(client_for(annotator), item, "keep").status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.VERIFICATION  # waits for the second annotator
    assert verify_post(client_for(annotator2), item, "keep").status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REWRITE
    assert "kept by ann1, ann2" in item.revisions.order_by("-number").first().note


def test_two_verifiers_agreeing_delete_reject_with_the_criteria(annotator, annotator2):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    verify_post(client_for(annotator), item, "delete", ["wrong_answer"])
    verify_post(client_for(annotator2), item, "delete", ["bias", "wrong_answer"])
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED
    assert "bias, wrong_answer" in item.revisions.order_by("-number").first().note


def test_disagreement_goes_to_adjudication(annotator, annotator2, researcher, django_user_model):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    verify_post(client_for(annotator), item, "keep")
    verify_post(client_for(annotator2), item, "delete", ["heavy_math"])
    adjudication = Adjudication.objects.get(item=item, status="open")
    item.refresh_from_db()
    assert item.status == ItemStatus.VERIFICATION
    listing = client_for(annotator).get(reverse("annotation:adjudication_list")).content.decode()
    assert str(item) in listing
    # One of the two who disagreed may not settle it.
    refused = client_for(annotator).post(reverse("annotation:adjudication", args=[adjudication.pk]), {"decision": "keep"})
    assert refused.status_code == 409
    third = django_user_model.objects.create_user("ann3")
    third.groups.add(*annotator.groups.all())
    text = visible_text(client_for(third).get(reverse("annotation:adjudication", args=[adjudication.pk])))
    assert "ann2 Delete 1.2 Heavy mathematics or domain knowledge" in text and "heavy_math" not in text
    listing = visible_text(client_for(third).get(reverse("annotation:adjudication_list")))
    assert "ann1: Keep; ann2: Delete" in listing
    assert client_for(third).post(reverse("annotation:adjudication", args=[adjudication.pk]),
                               {"decision": "delete", "comment": "needs algebra"}).status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED


def test_verification_form_refuses_inconsistent_decisions(annotator_client):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    assert verify_post(annotator_client, item, "delete").status_code == 400  # no criterion
    assert verify_post(annotator_client, item, "keep", ["bias"]).status_code == 400
    assert not VerificationDecision.objects.exists()
    assert verify_post(annotator_client, item, "keep").status_code == 302
    # Twice (another tab): nothing changes, the page says so and shows the decision read-only.
    again = verify_post(annotator_client, item, "delete", ["bias"])
    assert again.status_code == 302 and again["Location"] == reverse("annotation:verify", args=[item.pk])
    assert [d.decision for d in VerificationDecision.objects.all()] == ["keep"]
    text = visible_text(annotator_client.get(again["Location"]))
    assert "You had already decided “Keep”" in text and "was not changed" in text


def test_verification_review_and_adjudication_forms_name_the_bad_field(annotator, annotator2, django_user_model):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    a = client_for(annotator)
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
        response = client_for(annotator2).post(review, data)
        assert response.status_code == 400 and ("Action:" in response.content.decode()
                                                or "Send back to:" in response.content.decode())
    adjudication = Adjudication.objects.create(item=item, stage=Stage.VERIFICATION)
    third = django_user_model.objects.create_user("ann3")
    third.groups.add(*annotator.groups.all())
    response = client_for(third).post(reverse("annotation:adjudication", args=[adjudication.pk]), {"decision": "maybe"})
    assert response.status_code == 400 and "Decision: Select a valid choice." in response.content.decode()


def test_a_decision_made_is_shown_read_only_without_active_buttons(annotator_client):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    url = reverse("annotation:verify", args=[item.pk])
    before = annotator_client.get(url).content.decode()
    assert 'id="keep-button"' in before and 'data-key="k"' in before and "<fieldset disabled" not in before
    verify_post(annotator_client, item, "delete", ["heavy_math"], comment="needs algebra")
    page = annotator_client.get(url)
    html, text = page.content.decode(), visible_text(page)
    assert "You have decided: Delete — 1.2 Heavy mathematics or domain knowledge" in text
    assert "needs algebra" in text and "A decision is final" in text
    assert "<fieldset disabled" in html and 'id="keep-button"' not in html and 'data-key="k"' not in html
    assert 'id="crit-heavy_math" checked' in html


def test_auto_advance_opens_the_next_item_and_can_be_turned_off(annotator_client):
    set_k(Stage.VERIFICATION, 1)
    first, second, third = make_items(3)
    after = verify_post(annotator_client, first, "keep")
    assert after["Location"] == reverse("annotation:verify", args=[second.pk])  # on by default
    text = visible_text(annotator_client.get(after["Location"]))
    assert f"Saved: keep for {first}." in text and "Auto-advance is on" in text
    off = annotator_client.post(reverse("annotation:auto_advance"), {"on": "0", "back": after["Location"]})
    assert off["Location"] == after["Location"]
    stay = verify_post(annotator_client, second, "keep")
    assert stay["Location"] == reverse("annotation:verify", args=[second.pk])
    assert "Auto-advance is off" in visible_text(annotator_client.get(stay["Location"]))
    # The setting does not send anyone to another site.
    elsewhere = annotator_client.post(reverse("annotation:auto_advance"), {"on": "1", "back": "https://evil.example/"})
    assert elsewhere["Location"] == reverse("annotation:queue")
    verify_post(annotator_client, third, "keep")
    last = verify_post(annotator_client, third, "keep")  # already decided: read-only page, not the next item
    assert last["Location"] == reverse("annotation:verify", args=[third.pk])


def test_auto_advance_back_to_the_queue_when_the_stage_is_done(annotator_client):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    after = verify_post(annotator_client, item, "keep")
    assert after["Location"] == reverse("annotation:queue")
    assert "No more items for you in Question verification." in visible_text(annotator_client.get(after["Location"]))


def test_verification_screen_shows_the_suggestion_with_its_belief(annotator_client, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    page = annotator_client.get(reverse("annotation:verify", args=[item.pk])).content.decode()
    assert 'id="judge-decision">delete<' in page and 'id="judge-decision-belief">0.83<' in page
    assert 'id="judge-heavy_math"' in page and "0.77" in page
    assert 'id="accept-suggestion"' in page
    other = annotator_client.get(reverse("annotation:verify", args=[to_verify[1].pk])).content.decode()
    assert 'id="judge-suggestion"' not in other


def test_accepting_the_suggestion_records_judge_accepted(annotator_client, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    response = annotator_client.post(reverse("annotation:verify", args=[item.pk]),
                                     {"decision": "delete", "criteria": ["heavy_math"], "item_version": item.version})
    assert response.status_code == 302
    decision = VerificationDecision.objects.get(item=item)
    assert decision.source == "judge-accepted"
    reviews = BeliefReview.objects.filter(label__item=item)
    assert reviews.count() == 6 and all(r.agrees for r in reviews) and {r.via for r in reviews} == {"verification"}
    keep = BeliefLabel.objects.get(item=item, aspect="keep")
    assert (keep.final_label, keep.final_source) == ("delete", "judge-accepted")
    page = annotator_client.get(reverse("annotation:verify", args=[item.pk])).content.decode()
    assert 'id="decision-source"' in page and "Judge accepted" in page
