"""Hand-outs: triage and audit order, the random share, the threshold, k reviewers, expiry, resume."""
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import BeliefLabel, BeliefLease
from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_lease_release, belief_review_submit

from .support import record_free_text

pytestmark = pytest.mark.django_db

BELIEFS = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.6, 0.4, 0.95]
# Audit keys: the uniform order is target result:9, 8, 7, ... (reverse of the targets).
AUDIT_KEYS = [0.95 - i * 0.1 for i in range(10)]


def _labels(queue, items, beliefs=BELIEFS, keys=AUDIT_KEYS):
    record_free_text(queue, items, beliefs)
    for i, key in enumerate(keys):
        BeliefLabel.objects.filter(queue=queue, target=f"result:{i}").update(audit_key=key)
    return {label.target: label for label in BeliefLabel.objects.filter(queue=queue)}


def _review_all(queue, user, n):
    handed = []
    for _ in range(n):
        lease = belief_lease_next(queue_id=queue.pk, user=user)
        if lease is None:
            break
        handed.append((lease.label.target, lease.stream, lease.handout_number))
        belief_review_submit(lease_id=lease.pk, user=user, human_label="correct")
    return handed


def test_triage_hands_out_lowest_belief_first_and_every_fifth_at_random(queue, items, annotator):
    _labels(queue, items)
    handed = _review_all(queue, annotator, 10)
    # By belief: result:1 (.1), 5 (.2), 3 (.3), 8 (.4), then the 5th hand-out at random: the smallest audit
    # key among those left is result:9; then 2 (.5), 7 (.6), 4 (.7), 6 (.8), and the 10th at random: 0.
    assert handed == [("result:1", "order", 1), ("result:5", "order", 2), ("result:3", "order", 3),
                      ("result:8", "order", 4), ("result:9", "random", 5), ("result:2", "order", 6),
                      ("result:7", "order", 7), ("result:4", "order", 8), ("result:6", "order", 9),
                      ("result:0", "random", 10)]
    assert _review_all(queue, annotator, 1) == []
    first = dict(BeliefLabel.objects.filter(queue=queue).values_list("target", "first_stream"))
    assert first["result:9"] == "random" and first["result:1"] == "order"


def test_audit_order_follows_the_audit_keys(queue, items, annotator):
    belief_queue_policy_set(queue_id=queue.pk, order="audit")
    _labels(queue, items)
    handed = _review_all(queue, annotator, 4)
    assert handed == [("result:9", "random", 1), ("result:8", "random", 2), ("result:7", "random", 3),
                      ("result:6", "random", 4)]


def test_the_order_stream_stops_at_the_threshold_and_then_draws_at_random(queue, items, annotator):
    belief_queue_policy_set(queue_id=queue.pk, accept_threshold=0.35, random_share=0.0)
    _labels(queue, items)
    handed = _review_all(queue, annotator, 5)
    assert [t for t, _, _ in handed[:3]] == ["result:1", "result:5", "result:3"]
    # Nothing left below .35: the hand-outs come from the random stream, recorded as such.
    assert handed[3:] == [("result:9", "random", 4), ("result:8", "random", 5)]


def test_unscored_labels_come_first_in_triage(queue, items, annotator):
    _labels(queue, items)
    from annotation.services.belief import belief_labels_record

    from .support import free_text_row
    belief_labels_record(queue=queue, rows=[free_text_row(items[0], 99, belief=None, status="unscored")])
    lease = belief_lease_next(queue_id=queue.pk, user=annotator)
    assert lease.label.target == "result:99"
    review = belief_review_submit(lease_id=lease.pk, user=annotator, human_label="incorrect")
    assert review.agrees is None
    lease.label.refresh_from_db()
    assert (lease.label.final_label, lease.label.final_source) == ("incorrect", "human-only")


def test_a_live_lease_is_given_back_to_its_holder_and_never_to_another(queue, items, annotator, annotator2):
    _labels(queue, items)
    first = belief_lease_next(queue_id=queue.pk, user=annotator)
    assert belief_lease_next(queue_id=queue.pk, user=annotator).pk == first.pk
    other = belief_lease_next(queue_id=queue.pk, user=annotator2)
    assert other.label_id != first.label_id
    belief_lease_release(lease_id=first.pk, user=annotator)
    again = belief_lease_next(queue_id=queue.pk, user=annotator2)
    assert again.pk == other.pk  # annotator2 still holds its own lease


def test_an_expired_lease_comes_back_to_the_queue(queue, items, annotator, annotator2):
    _labels(queue, items)
    first = belief_lease_next(queue_id=queue.pk, user=annotator)
    later = timezone.now() + timedelta(minutes=queue.lease_minutes + 1)
    taken = belief_lease_next(queue_id=queue.pk, user=annotator2, now=later)
    assert taken.label_id == first.label_id
    first.refresh_from_db()
    assert first.status == "released"
    assert BeliefLease.objects.filter(label_id=first.label_id, status="leased").count() == 1


def test_k_reviewers_one_after_the_other_never_the_same_person_twice(queue, items, annotator, annotator2, researcher):
    belief_queue_policy_set(queue_id=queue.pk, reviewers_per_label=2, random_share=0.0)
    _labels(queue, items, beliefs=[0.1, 0.2], keys=[0.5, 0.6])
    a = belief_lease_next(queue_id=queue.pk, user=annotator)
    b = belief_lease_next(queue_id=queue.pk, user=annotator2)
    assert (a.label.target, b.label.target) == ("result:0", "result:1")  # not at once
    belief_review_submit(lease_id=a.pk, user=annotator, human_label="incorrect")
    a2 = belief_lease_next(queue_id=queue.pk, user=annotator)
    assert a2 is None  # result:0 reviewed by them, result:1 held by annotator2
    c = belief_lease_next(queue_id=queue.pk, user=researcher)
    assert c.label.target == "result:0"
    label = BeliefLabel.objects.get(queue=queue, target="result:0")
    assert label.final_label == ""  # one review of two
    belief_review_submit(lease_id=c.pk, user=researcher, human_label="correct")
    label.refresh_from_db()
    # A tie goes to the label given first.
    assert (label.final_label, label.final_source) == ("incorrect", "judge-overridden")
