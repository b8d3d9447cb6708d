"""Review until precise enough (issue 21, point 2; annotation.selectors.belief_precision): each queue shows the
half-width of its share now and how many more uniform reviews reach the target; with a target the queue stops
handing out once the confidence sequence reaches it, and reopens when the target is cleared or lowered."""
import random
import re

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from annotation import confidence_sequence
from annotation.models import BeliefLabel, BeliefLease, BeliefQueue, BeliefReview, ItemStatus
from annotation.selectors.belief_precision import precision, precisions
from annotation.services.belief import belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import PrecisionReached, belief_lease_next, belief_review_submit
from foundation.errors import Invalid
from tests.annotation.belief_support import record_free_text
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def items(db):
    return make_items(5, status=ItemStatus.PUBLISHED)


@pytest.fixture
def queue(db):
    return belief_queue_for(name="judge-a", order="triage", random_share=0.2, blind=False)


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def _review_until_closed(queue, user, rng, limit=200):
    """Review hand-outs (people say "correct" 85% of the time) until the queue closes; the reviews made."""
    for done in range(limit):
        try:
            lease = belief_lease_next(queue_id=queue.pk, user=user)
        except PrecisionReached:
            return done
        assert lease is not None, "labels are left"
        belief_review_submit(lease_id=lease.pk, user=user,
                             human_label="correct" if rng.random() < 0.85 else "incorrect")
    raise AssertionError("the queue never closed")


def _stored_answers(queue):
    """The uniform sample's answers recomputed from the rows: in audit order every hand-out is a uniform draw,
    so every reviewed label is in it, in audit-key order."""
    reviewed = dict(BeliefReview.objects.filter(label__queue=queue).values_list("label_id", "human_label"))
    labels = BeliefLabel.objects.filter(queue=queue, pk__in=reviewed).order_by("audit_key", "pk")
    return [float(reviewed[label.pk] == "correct") for label in labels]


def test_a_queue_with_a_target_stops_handing_out_when_reached_and_reopens_when_cleared(queue, items, annotator):
    rng = random.Random(21)
    record_free_text(queue, items, [round(rng.random(), 4) for _ in range(150)])
    belief_queue_policy_set(queue_id=queue.pk, order="audit", target_half_width=0.2)
    queue.refresh_from_db()
    done = _review_until_closed(queue, annotator, rng)
    answers = _stored_answers(BeliefQueue.objects.get(pk=queue.pk))
    assert len(answers) == done
    # It closed at the first review at which the sequence's half-width was at most the target, not later.
    assert confidence_sequence.first_reached(answers, 0.2) == done
    figures = precision(queue=BeliefQueue.objects.get(pk=queue.pk))
    assert precisions(queues=[BeliefQueue.objects.get(pk=queue.pk)])[queue.pk] == figures  # the queue list's batch
    expected = confidence_sequence.confidence_sequence(answers)
    assert figures["reached"] and figures["n"] == done and figures["more_uniform"] == 0
    assert (figures["sequence"]["low"], figures["sequence"]["high"]) == (expected.low, expected.high)
    assert figures["sequence"]["half_width"] <= 0.2 < figures["fixed"]["half_width"] + 0.2
    assert figures["fixed"]["half_width"] < figures["sequence"]["half_width"]  # the fixed-n one is narrower
    handed = BeliefLease.objects.filter(label__queue=queue).count()
    with pytest.raises(PrecisionReached) as refused:
        belief_lease_next(queue_id=queue.pk, user=annotator)
    assert refused.value.http_status == 409 and refused.value.details["n_uniform"] == done
    assert BeliefLease.objects.filter(label__queue=queue).count() == handed  # nothing handed out, no number used

    belief_queue_policy_set(queue_id=queue.pk, target_half_width=None)  # cleared: open again
    lease = belief_lease_next(queue_id=queue.pk, user=annotator)
    assert lease is not None
    belief_review_submit(lease_id=lease.pk, user=annotator, human_label="correct")
    belief_queue_policy_set(queue_id=queue.pk, target_half_width=0.1)  # a finer target: open until it is reached
    queue.refresh_from_db()
    more = precision(queue=queue)["more_uniform"]
    assert more is not None and more > 0 and not precision(queue=queue)["reached"]
    assert belief_lease_next(queue_id=queue.pk, user=annotator) is not None


def test_a_lease_held_when_the_target_is_reached_is_still_given_back(queue, items, annotator, annotator2):
    rng = random.Random(5)
    record_free_text(queue, items, [round(rng.random(), 4) for _ in range(120)])
    belief_queue_policy_set(queue_id=queue.pk, order="audit", target_half_width=0.25)
    done = _review_until_closed(queue, annotator, rng)
    belief_queue_policy_set(queue_id=queue.pk, target_half_width=None)
    held = belief_lease_next(queue_id=queue.pk, user=annotator2)  # the next label in the random order
    belief_queue_policy_set(queue_id=queue.pk, target_half_width=0.25)
    queue.refresh_from_db()
    figures = precision(queue=queue)
    assert figures["reached"] and figures["n"] == done and figures["waiting"] == 1
    assert belief_lease_next(queue_id=queue.pk, user=annotator2).pk == held.pk
    with pytest.raises(PrecisionReached):
        belief_lease_next(queue_id=queue.pk, user=annotator)


def test_the_pages_say_how_precise_the_queue_is_and_close_it_kindly(queue, items, annotator, researcher):
    rng = random.Random(8)
    record_free_text(queue, items, [round(rng.random(), 4) for _ in range(150)])
    belief_queue_policy_set(queue_id=queue.pk, order="audit", random_share=0.2)
    for _ in range(12):
        lease = belief_lease_next(queue_id=queue.pk, user=annotator)
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label="correct")
    res = _client(researcher)
    # The target is set on the trust page's policy form, validated with the field named.
    policy = {"order": "audit", "random_share": "0.2", "reviewers_per_label": "1", "lease_minutes": "30",
              "accept_threshold": "", "blind": ""}
    refused = res.post(reverse("annotation:belief_trust", args=[queue.name]), {**policy, "target_half_width": "0.5"})
    assert refused.status_code == 400
    assert "Target half-width: above 0 and below 0.5" in refused.content.decode()
    assert BeliefQueue.objects.get(pk=queue.pk).target_half_width is None
    saved = res.post(reverse("annotation:belief_trust", args=[queue.name]), {**policy, "target_half_width": "0.2"})
    assert saved.status_code == 302 and BeliefQueue.objects.get(pk=queue.pk).target_half_width == 0.2
    queue.refresh_from_db()
    figures = precision(queue=queue)
    assert not figures["reached"] and figures["more_uniform"] > 0
    page = res.get(reverse("annotation:belief_trust", args=[queue.name])).content.decode()
    section = page[page.index('id="precision"'):]
    assert f"[{figures['sequence']['low']:.3f}, {figures['sequence']['high']:.3f}]" in section
    assert f"[{figures['fixed']['low']:.3f}, {figures['fixed']['high']:.3f}]" in section
    assert f"About {figures['more_uniform']} more uniform reviews (about {figures['more_uniform']} hand-outs)" in section
    listing = _client(annotator).get(reverse("annotation:belief_queues")).content.decode()
    assert re.search(rf'id="precision-{queue.name}" data-half-width="{figures["sequence"]["half_width"]:.6f}"', listing)
    assert f"About {figures['more_uniform']} more uniform reviews" in listing
    assert "Share of answers correct: " not in listing  # the estimate itself is for researchers
    assert f"Share of answers correct: {figures['value']:.3f}" in res.get(reverse("annotation:belief_queues")).content.decode()

    _review_until_closed(queue, annotator, rng)
    ann = _client(annotator)
    answer = ann.post(reverse("annotation:belief_next", args=[queue.name]))
    assert answer.status_code == 302 and answer["Location"] == reverse("annotation:belief_queues")
    [message] = list(get_messages(answer.wsgi_request))
    assert message.level_tag == "info" and "has reached the precision its researchers asked for" in message.message
    listing = ann.get(reverse("annotation:belief_queues")).content.decode()
    assert f'id="closed-{queue.name}"' in listing and f'id="next-{queue.name}"' not in listing
    assert f'id="reached-{queue.name}"' in listing


def test_the_api_sets_the_target_and_the_hand_out_answers_precision_reached(queue, items, annotator, researcher):
    rng = random.Random(13)
    record_free_text(queue, items, [round(rng.random(), 4) for _ in range(150)])
    belief_queue_policy_set(queue_id=queue.pk, order="audit")
    res = _client(researcher)
    url = reverse("annotation_api:belief_policy", args=[queue.name])
    for wrong in (0, 0.5, -0.1, "x"):
        refused = res.patch(url, {"target_half_width": wrong}, content_type="application/json")
        assert refused.status_code == 400 and "target_half_width" in refused.json(), wrong
    with pytest.raises(Invalid, match="target_half_width"):
        belief_queue_policy_set(queue_id=queue.pk, target_half_width=0.7)
    answer = res.patch(url, {"target_half_width": 0.25}, content_type="application/json")
    assert answer.status_code == 200
    body = answer.json()
    assert body["target_half_width"] == 0.25 and body["precision"]["n"] == 0
    assert body["precision"]["sequence"]["half_width"] == 0.5 and body["precision"]["more_uniform"] > 0
    ann = _client(annotator)
    closed = None
    for _ in range(150):
        handed = ann.post(reverse("annotation_api:belief_next", args=[queue.name]))
        if handed.status_code == 409:
            closed = handed.json()
            break
        assert handed.status_code == 200
        lease = handed.json()["lease"]
        ann.post(reverse("annotation_api:belief_review_submit", args=[lease]),
                 {"human_label": "correct" if rng.random() < 0.8 else "incorrect"}, content_type="application/json")
    assert closed is not None and closed["code"] == "precision_reached"
    assert closed["half_width"] <= closed["target_half_width"] == 0.25
    # The share itself is the researchers' (the annotators' page hides it): not in an annotator's 409.
    assert "estimate" not in closed and "interval" not in closed
    to_researcher = res.post(reverse("annotation_api:belief_next", args=[queue.name]))
    assert to_researcher.status_code == 409
    low, high = to_researcher.json()["interval"]
    assert high - low == pytest.approx(2 * closed["half_width"])
    assert low <= to_researcher.json()["estimate"] <= high
    trust = res.get(reverse("annotation_api:belief_trust", args=[queue.name])).json()
    assert trust["precision"]["reached"] and trust["queue"]["target_half_width"] == 0.25
    assert res.patch(url, {"target_half_width": None}, content_type="application/json").json()["target_half_width"] is None
    assert ann.post(reverse("annotation_api:belief_next", args=[queue.name])).status_code == 200


def test_a_queue_whose_uniform_sample_is_all_reviewed_says_no_review_can_narrow_it(queue, items, annotator):
    """The statistics review: with every label reviewed and the target not reached, the page still said "About 2
    more uniform reviews (about 2 hand-outs) reach ±0.1", though no label was left to hand out."""
    record_free_text(queue, items, [0.9] * 12)
    belief_queue_policy_set(queue_id=queue.pk, order="audit", target_half_width=0.01)
    queue.refresh_from_db()
    while (lease := belief_lease_next(queue_id=queue.pk, user=annotator)) is not None:
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label="correct")
    figures = precision(queue=BeliefQueue.objects.get(pk=queue.pk))
    assert figures["n"] == 12 and not figures["reached"]
    assert figures["more_uniform"] is None and figures["more_handouts"] is None
    assert figures["note"].startswith("Every label of the uniform sample has been reviewed")
