"""annotation.services.belief_sightings: a label's judge shown to a person is recorded, and a review they give of it
later is not blind, whatever the queue's policy is by then (blind turned on mid-way); never shown, it is; a
researcher's review never is. Each annotator page and API answer that shows a judge records it, and only then."""
import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import BeliefReview, BeliefSighting, ItemStatus
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from tests.annotation.belief_support import DELETE_FOR_MATH, record_free_text, screening_rows
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _seen(user) -> set[str]:
    return set(BeliefSighting.objects.filter(user=user).values_list("label__target", flat=True))


def test_a_label_seen_while_the_queue_was_sighted_is_not_reviewed_blind_after_it_turns_blind(annotator, annotator2):
    queue = belief_queue_for(name="turns-blind", order="audit", blind=False)
    record_free_text(queue, make_items(2, status=ItemStatus.PUBLISHED), [0.4, 0.8])
    seen = belief_lease_next(queue_id=queue.pk, user=annotator)
    page = _client(annotator).get(reverse("annotation:belief_review", args=[seen.pk]))
    assert b'id="judge-belief"' in page.content and _seen(annotator) == {seen.label.target}
    belief_queue_policy_set(queue_id=queue.pk, blind=True)
    assert b'id="blind-note"' in _client(annotator).get(reverse("annotation:belief_review", args=[seen.pk])).content
    belief_review_submit(lease_id=seen.pk, user=annotator, human_label="correct")
    # The other label: first shown to annotator2 when the queue was already blind.
    unseen = belief_lease_next(queue_id=queue.pk, user=annotator2)
    _client(annotator2).get(reverse("annotation:belief_review", args=[unseen.pk]))
    assert _seen(annotator2) == set()
    belief_review_submit(lease_id=unseen.pk, user=annotator2, human_label="correct")
    assert dict(BeliefReview.objects.values_list("reviewer__username", "blind")) == {
        annotator.username: False, annotator2.username: True}


def test_the_next_label_api_records_a_judge_it_shows_and_not_one_it_hides(annotator, annotator2):
    queue = belief_queue_for(name="api-seen", order="audit", blind=False)
    record_free_text(queue, make_items(2, status=ItemStatus.PUBLISHED), [0.4, 0.8])
    shown = _client(annotator).post(reverse("annotation_api:belief_next", args=[queue.name])).json()
    assert shown["label"]["label"] is not None and _seen(annotator) == {shown["label"]["target"]}
    belief_queue_policy_set(queue_id=queue.pk, blind=True)
    hidden = _client(annotator2).post(reverse("annotation_api:belief_next", args=[queue.name])).json()
    assert hidden["label"]["label"] is None and _seen(annotator2) == set()


def test_a_researchers_review_is_never_blind(researcher):
    queue = belief_queue_for(name="res-blind", order="audit", blind=True)
    record_free_text(queue, make_items(1, status=ItemStatus.PUBLISHED), [0.4])
    lease = belief_lease_next(queue_id=queue.pk, user=researcher)
    assert b'id="blind-note"' in _client(researcher).get(reverse("annotation:belief_review", args=[lease.pk])).content
    review = belief_review_submit(lease_id=lease.pk, user=researcher, human_label="correct")
    assert review.blind is False  # they read every judge on the trust page, the exports and the labels API


def test_the_verification_screen_records_the_suggestions_it_shows(annotator, annotator2):
    queue = belief_queue_for(name="screen-seen", blind=False, reviewers_per_label=2)
    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source="s")
    belief_labels_record(queue=queue, rows=screening_rows(item, DELETE_FOR_MATH))
    _client(annotator).get(reverse("annotation:verify", args=[item.pk]))
    assert _seen(annotator) == {f"item:{item.pk}"} and BeliefSighting.objects.filter(user=annotator).count() == 6
    belief_queue_policy_set(queue_id=queue.pk, blind=True)
    _client(annotator2).get(reverse("annotation:verify", args=[item.pk]))
    assert _seen(annotator2) == set()
    # A decision of the one who saw them reviews every suggestion, none blind; of the other, all blind.
    for user in (annotator, annotator2):
        _client(user).post(reverse("annotation:verify", args=[item.pk]), {
            "decision": "delete", "criteria": ["heavy_math"], "item_version": item.version, "comment": ""})
    blind = {(r.reviewer_id, r.blind) for r in BeliefReview.objects.all()}
    assert blind == {(annotator.pk, False), (annotator2.pk, True)}


def test_a_closed_lease_page_shows_no_judge_and_records_none(annotator, annotator2, researcher):
    """ann1's lease expired and ann2 reviewed the label (k = 1: its judge is no longer hidden); ann1's old lease page
    shows only that the lease is closed. Asked for a second review later (k = 2), ann1 has never seen the judge:
    their review is blind."""
    from django.utils import timezone

    from annotation.models import BeliefLease

    queue = belief_queue_for(name="closed-page", order="audit", blind=True)
    record_free_text(queue, make_items(1, status=ItemStatus.PUBLISHED), [0.4])
    old = belief_lease_next(queue_id=queue.pk, user=annotator)
    BeliefLease.objects.filter(pk=old.pk).update(expires_at=timezone.now())
    taken = belief_lease_next(queue_id=queue.pk, user=annotator2)
    belief_review_submit(lease_id=taken.pk, user=annotator2, human_label="correct")
    page = _client(annotator).get(reverse("annotation:belief_review", args=[old.pk])).content
    assert b'id="lease-closed"' in page and b'id="judge-belief"' not in page
    assert _seen(annotator) == set()
    belief_queue_policy_set(queue_id=queue.pk, reviewers_per_label=2)
    again = belief_lease_next(queue_id=queue.pk, user=annotator)
    assert b'id="blind-note"' in _client(annotator).get(reverse("annotation:belief_review", args=[again.pk])).content
    assert belief_review_submit(lease_id=again.pk, user=annotator, human_label="incorrect").blind is True
