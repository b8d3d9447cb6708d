"""verification_submit and the judge's screening suggestion (annotation.services.verification): where each decision
came from: the suggestion changed (judge-overridden, per label) or absent (human-only); decisions interleaved at random
with a blind review queue of the same labels keep every review sound."""
import random

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import (
    Adjudication,
    BeliefLabel,
    BeliefLease,
    BeliefQueue,
    BeliefReview,
    ItemRevision,
    ItemStatus,
    Stage,
)
from annotation.selectors.belief import judge_hidden
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.verification import verification_submit
from tests.annotation.belief_support import DELETE_FOR_MATH, screening_rows
from tests.annotation.workflow_support import make_items, set_k
from tests.conftest import _make_user

pytestmark = pytest.mark.django_db


def test_changing_the_suggestion_records_judge_overridden(annotator, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    decision = verification_submit(item_id=item.pk, user=annotator, decision="delete", criteria=["bias"],
                                   item_version=item.version)
    assert decision.source == "judge-overridden"
    labels = {label.aspect: label for label in BeliefLabel.objects.filter(item=item)}
    assert labels["keep"].final_source == "judge-accepted"  # delete, as the judge said
    assert (labels["1.2"].final_label, labels["1.2"].final_source) == ("no", "judge-overridden")
    assert (labels["1.5"].final_label, labels["1.5"].final_source) == ("yes", "judge-overridden")


def test_without_a_suggestion_the_decision_is_human_only(annotator, to_verify):
    item = to_verify[1]
    decision = verification_submit(item_id=item.pk, user=annotator, decision="keep", criteria=[],
                                   item_version=item.version)
    assert decision.source == "human-only"


# ---- verification decisions and the blind review queue, interleaved at random


def _sighted_now(labels, user, seen: set, items=None) -> None:
    """Every label whose judge `user` may see now (what any page shows them: `judge_hidden`), as seen."""
    for label in labels:
        if items is None or label.item_id in items:
            if not judge_hidden(label, user=user):
                seen.add((label.pk, user.pk))


@pytest.mark.parametrize("seed", range(8))
def test_any_interleaving_of_queue_answers_and_verification_keeps_every_review_sound(
        seed, annotator, annotator2, django_user_model):
    """Three annotators ask for labels of a screening queue, look at their lease pages, answer them (API or
    page) and verify the items, in a random order, with random k of the queue and of verification, while a
    researcher turns blind review on and off and changes k between their steps. Whatever the order: nothing is a
    500; a review is recorded blind only when its reviewer had never been shown the judge's
    label (whatever the queue's policy is by then); no label gets a queue review once it has its k reviews (k as it
    was then); no screening label is reviewed blind in the queue once its item's verification verdicts can be read
    (`past_blind_review`); nobody reviews a label twice."""
    rng = random.Random(seed)
    people = [annotator, annotator2, _make_user(django_user_model, "ann3", "annotators")]
    set_k(Stage.VERIFICATION, rng.choice([1, 2]))
    items = make_items(2, status=ItemStatus.VERIFICATION, source=f"mix{seed}")
    queue = belief_queue_for(name=f"scr-mix{seed}", blind=seed % 4 != 3, reviewers_per_label=rng.choice([1, 2, 3]),
                             order="audit")
    for item in items:
        belief_labels_record(queue=queue, rows=screening_rows(item, DELETE_FOR_MATH))
    labels = list(BeliefLabel.objects.filter(queue=queue).select_related("queue"))
    clients = {}
    for user in people:
        clients[user.pk] = Client(raise_request_exception=False)
        clients[user.pk].force_login(user)
    seen: set[tuple[int, int]] = set()  # (label, person): the judge's label was on a page of theirs
    last = 0
    for _ in range(60):
        user = rng.choice(people)
        client = clients[user.pk]
        action = rng.choice(["next", "look", "answer", "answer", "verify", "policy"])
        if action == "policy":  # a researcher, between the annotators' steps: blind on or off, or another k
            change = rng.choice([{"blind": True}, {"blind": False}, {"reviewers_per_label": rng.choice([1, 2, 3])}])
            belief_queue_policy_set(queue_id=queue.pk, **change)
            for label in labels:
                label.queue.refresh_from_db()
        held = BeliefLease.objects.filter(reviewer=user, label__queue=queue).order_by("-pk").first()
        if action == "next":
            response = client.post(reverse("annotation_api:belief_next", args=[queue.name]))
            assert response.status_code in (200, 204), response.content
            if response.status_code == 200 and response.json()["label"]["label"] is not None:
                seen.add((response.json()["label"]["id"], user.pk))
        elif action == "look" and held is not None:
            assert client.get(reverse("annotation:belief_review", args=[held.pk])).status_code == 200
            _sighted_now([held.label], user, seen)
        elif action == "answer" and held is not None:
            _sighted_now([held.label], user, seen)  # the page they answer on
            choice = held.label.choices[0]
            if rng.random() < 0.5:
                response = client.post(reverse("annotation_api:belief_review_submit", args=[held.pk]),
                                       {"human_label": choice}, content_type="application/json")
            else:
                response = client.post(reverse("annotation:belief_review", args=[held.pk]), {"human_label": choice})
            assert response.status_code in (201, 302, 409), (response.status_code, response.content[:300])
        elif action == "verify":
            item = rng.choice(items)
            item.refresh_from_db()
            _sighted_now(labels, user, seen, items={item.pk})  # the verification screen's suggestions
            decision = rng.choice(["keep", "delete"])
            data = {"decision": decision, "item_version": item.version, "comment": "",
                    **({"criteria": ["heavy_math"]} if decision == "delete" else {})}
            response = client.post(reverse("annotation:verify", args=[item.pk]), data)
            assert response.status_code < 500, response.content[:300]
        k = BeliefQueue.objects.get(pk=queue.pk).reviewers_per_label  # as it was when this step's reviews came
        for review in BeliefReview.objects.filter(label__queue=queue, pk__gt=last).order_by("pk"):
            assert not (review.blind and (review.label_id, review.reviewer_id) in seen), \
                f"review {review.pk} ({review.via}) recorded blind although its reviewer had been shown the judge"
            before = BeliefReview.objects.filter(label_id=review.label_id, pk__lt=review.pk).count()
            assert review.via != "queue" or before < k, "a queue review beyond k"
            last = review.pk
    for label in labels:
        reviews = list(BeliefReview.objects.filter(label=label).order_by("created_at", "pk"))
        assert len({r.reviewer_id for r in reviews}) == len(reviews)
        public_since = _verdicts_public_since(label.item)
        assert all(r.via != "queue" or not r.blind or public_since is None or r.created_at < public_since
                   for r in reviews), \
            "a blind queue review after the item's verification verdicts could be read"


def _verdicts_public_since(item):
    """When the item's verification verdicts first reached an annotator page (the revision that ended the stage, or
    the adjudication that lists them), or None."""
    moments = [a.created_at for a in Adjudication.objects.filter(item=item, stage=Stage.VERIFICATION)]
    moments += [r.created_at for r in ItemRevision.objects.filter(item=item, stage=Stage.VERIFICATION)]
    return min(moments, default=None)
