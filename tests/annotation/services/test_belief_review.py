"""Hand-outs (annotation.services.belief_review): triage and audit order, the random share, the threshold, k reviewers,
expiry, resume; 200 simultaneous "next label" requests by two reviewers (real threads, real connections, the HTTP
API): no label goes to both, the lowest-belief order and the random share hold; simultaneous requests of one
reviewer get the one lease they hold; the judge's clue-graph draft decided only as an edit of the clue-graph stage
may be made."""
import random
import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation import review_order
from annotation.models import (
    AnnotatorLease,
    AnnotatorLeaseStatus,
    BeliefLabel,
    BeliefLease,
    BeliefQueue,
    BeliefReview,
    ItemStatus,
    Stage,
)
from annotation.selectors.belief import judge_hidden
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import (
    belief_draft_resolve,
    belief_lease_next,
    belief_lease_release,
    belief_review_submit,
)
from foundation.errors import Conflict
from tests.annotation.belief_support import (
    DELETE_FOR_MATH,
    free_text_row,
    graph_draft,
    record_free_text,
    screening_rows,
)
from tests.annotation.workflow_support import client_for, make_items, set_k
from tests.conftest import _make_user

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


ROUNDS = 100  # x 2 reviewers = 200 requests


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_asking_at_once_never_get_the_same_label(items, annotator, annotator2):
    queue = belief_queue_for(name="judge-c", order="triage", random_share=0.2)
    rng = random.Random(11)
    record_free_text(queue, items, [round(rng.random(), 3) for _ in range(300)])
    barrier = threading.Barrier(2)
    got: dict[str, list[int]] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def worker(name: str, user) -> None:
        client = Client()
        client.force_login(user)
        try:
            for _ in range(ROUNDS):
                barrier.wait(timeout=60)
                response = client.post(reverse("annotation_api:belief_next", args=[queue.name]))
                assert response.status_code == 200, response.content
                lease = response.json()
                got[name].append(lease["label"]["id"])
                # Answer it, so that the next request asks for a fresh label.
                answer = client.post(reverse("annotation_api:belief_review_submit", args=[lease["lease"]]),
                                     {"human_label": "correct"}, content_type="application/json")
                assert answer.status_code == 201, answer.content
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=("a", annotator)),
               threading.Thread(target=worker, args=("b", annotator2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert connection.vendor == "postgresql"
    assert len(got["a"]) == len(got["b"]) == ROUNDS
    assert not set(got["a"]) & set(got["b"])  # never one label to both
    assert len(set(got["a"] + got["b"])) == 2 * ROUNDS
    assert BeliefReview.objects.count() == 2 * ROUNDS
    leases = list(BeliefLease.objects.filter(label__queue=queue).select_related("label"))
    assert len(leases) == 2 * ROUNDS and len({lease.handout_number for lease in leases}) == 2 * ROUNDS
    # The random share: exactly the hand-out numbers the policy names are drawn at random.
    numbers = sorted(lease.handout_number for lease in leases)
    assert numbers == list(range(1, 2 * ROUNDS + 1))
    assert sum(lease.stream == "random" for lease in leases) == 40
    assert all((lease.stream == "random") == review_order.is_random_handout(lease.handout_number, 0.2)
               for lease in leases)
    # Lowest belief first, and the random stream in audit-key order: nothing left behind was ahead of them.
    untouched = list(BeliefLabel.objects.filter(queue=queue, first_stream="").values_list("belief", "audit_key"))
    order_keys = [review_order.triage_key(le.label.belief, le.label.audit_key) for le in leases if le.stream == "order"]
    random_keys = [le.label.audit_key for le in leases if le.stream == "random"]
    assert max(order_keys) < min(review_order.triage_key(b, u) for b, u in untouched)
    assert max(random_keys) < min(u for _, u in untouched)


SIMULTANEOUS = 6


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("via", ["api", "page"])
def test_simultaneous_next_requests_of_one_reviewer_get_the_one_lease_they_hold(items, annotator, via):
    """A double click, two tabs, a retrying client: each request used to take a lease of its own (2-4 live
    at once, each blocking its label for the lease time); all of them get the first one's lease."""
    queue = belief_queue_for(name="judge-d", order="triage", random_share=0.2)
    record_free_text(queue, items, [0.1 * (i + 1) for i in range(8)])
    barrier = threading.Barrier(SIMULTANEOUS)
    got: list[int] = []
    errors: list[BaseException] = []

    def ask() -> None:
        client = Client()
        client.force_login(annotator)
        try:
            barrier.wait(timeout=60)
            if via == "api":
                response = client.post(reverse("annotation_api:belief_next", args=[queue.name]))
                assert response.status_code == 200, response.content
                got.append(response.json()["lease"])
            else:
                response = client.post(reverse("annotation:belief_next", args=[queue.name]))
                assert response.status_code == 302, response.content
                got.append(int(response["Location"].rstrip("/").split("/")[-1]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask) for _ in range(SIMULTANEOUS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert connection.vendor == "postgresql"
    leases = list(BeliefLease.objects.filter(label__queue=queue, reviewer=annotator))
    assert [lease.status for lease in leases] == ["leased"]
    assert got == [leases[0].pk] * SIMULTANEOUS
    # One hand-out, so one hand-out number: the random share still counts hand-outs exactly.
    assert leases[0].handout_number == 1 and BeliefQueue.objects.get(pk=queue.pk).handouts == 1


# ---- a lease its holder can no longer answer (lease_closed): refused with 409, given back, never handed out again


def _blind_screening(name: str, k: int, source: str):
    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source=source)
    queue = belief_queue_for(name=name, blind=True, reviewers_per_label=k, order="audit")
    belief_labels_record(queue=queue, rows=screening_rows(item, DELETE_FOR_MATH))
    return item, queue


def _verify(user, item, decision="keep"):
    item.refresh_from_db()
    data = {"decision": decision, "item_version": item.version, "comment": ""}
    if decision == "delete":
        data["criteria"] = ["heavy_math"]
    assert client_for(user).post(reverse("annotation:verify", args=[item.pk]), data).status_code == 302


@pytest.mark.parametrize("via", ["api", "page"])
def test_a_lease_answered_on_the_verification_screen_is_given_back_and_refused(annotator, via):
    """The holder of a queue lease verifies the item: the verification decision is their review of the label (one per
    person), so the lease is given back; answering it is a 409, not the 500 of a second review."""
    item, queue = _blind_screening("scr-twice", 2, "tw")
    ann = Client(raise_request_exception=False)
    ann.force_login(annotator)
    handed = ann.post(reverse("annotation_api:belief_next", args=[queue.name])).json()
    lease_id, label = handed["lease"], BeliefLabel.objects.get(pk=handed["label"]["id"])
    _verify(annotator, item)
    assert BeliefLease.objects.get(pk=lease_id).status == "released"
    page = ann.get(reverse("annotation:belief_review", args=[lease_id])).content.decode()
    assert 'id="lease-closed"' in page and 'id="review-form"' not in page
    if via == "api":
        answer = ann.post(reverse("annotation_api:belief_review_submit", args=[lease_id]),
                          {"human_label": label.choices[0]}, content_type="application/json")
        assert answer.status_code == 409 and answer.json()["code"] == "already_reviewed"
    else:
        answer = ann.post(reverse("annotation:belief_review", args=[lease_id]),
                          {"human_label": label.choices[0], "next": "1"})
        assert answer.status_code == 409 and "verification or clue-graph screen" in answer.content.decode()
    assert BeliefReview.objects.filter(label=label, reviewer=annotator).count() == 1
    # The queue hands this reviewer none of the labels they reviewed on the screen, and the label goes to others.
    assert ann.post(reverse("annotation_api:belief_next", args=[queue.name])).status_code == 204
    assert belief_lease_next(queue_id=queue.pk, user=_other(annotator)) is not None


def _other(user):
    return _make_user(get_user_model(), f"other-{user.pk}", "annotators")


def test_a_held_lease_answered_on_the_screen_is_not_handed_back_again_and_again(annotator):
    """`belief_lease_next` gave a reviewer back their live lease even once they had reviewed its label on the
    verification screen (given back now even when it is still marked leased, e.g. a lease of before the fix)."""
    item, queue = _blind_screening("scr-again", 2, "ag")
    lease = belief_lease_next(queue_id=queue.pk, user=annotator)
    _verify(annotator, item)
    BeliefLease.objects.filter(pk=lease.pk).update(status="leased")  # as a lease of before the fix was left
    assert belief_lease_next(queue_id=queue.pk, user=annotator) is None
    assert BeliefLease.objects.get(pk=lease.pk).status == "released"


def test_a_live_lease_whose_label_got_its_reviews_meanwhile_is_refused_not_recorded_blind(annotator, annotator2):
    """k=1: B holds the keep label (blind); A verifies the item, the label has its one review and its judge is shown
    to everyone, B included. B's answer would be neither blind nor needed: 409, the lease given back."""
    item, queue = _blind_screening("scr-k1", 1, "k1")
    lease = belief_lease_next(queue_id=queue.pk, user=annotator2)
    label = lease.label
    _verify(annotator, item)
    assert not judge_hidden(label, user=annotator2)  # B may see the judge now
    with pytest.raises(Conflict) as refused:
        belief_review_submit(lease_id=lease.pk, user=annotator2, human_label="keep" if label.aspect == "keep" else "no")
    assert refused.value.code == "label_reviewed"
    assert not BeliefReview.objects.filter(label=label, reviewer=annotator2).exists()
    assert BeliefLease.objects.get(pk=lease.pk).status == "released"
    assert BeliefReview.objects.filter(label=label).count() == 1  # no review beyond k


def test_an_annotator_is_not_told_which_stream_handed_a_blind_label_out(annotator, researcher):
    """In triage order the order stream hands out the lowest beliefs: "stream": "order" tells a blind reviewer the
    judge doubted the label. Null while the label is in blind review for the caller, researchers included."""
    items = make_items(5, source="st")
    queue = belief_queue_for(name="tri-blind", order="triage", random_share=0.2, blind=True, accept_threshold=0.9)
    record_free_text(queue, items, [0.05, 0.95, 0.96, 0.97, 0.98, 0.99, 0.93, 0.94, 0.92, 0.91])
    for user in (annotator, researcher):
        handed = client_for(user).post(reverse("annotation_api:belief_next", args=[queue.name])).json()
        assert handed["stream"] is None and handed["label"]["belief"] is None
    belief_queue_policy_set(queue_id=queue.pk, blind=False)
    assert client_for(annotator).post(reverse("annotation_api:belief_next", args=[queue.name])).json()["stream"] == "order"


def test_a_label_about_an_item_changed_since_is_neither_handed_out_nor_answered(queue, items, annotator):
    """The lifecycle review: the queue handed out labels judged at an older content version and showed the item
    as it is now, so people reviewed content the judge never saw (feeding its agreement and calibration)."""
    from annotation.models import Item
    from annotation.services import item_update

    belief_queue_policy_set(queue_id=queue.pk, order="audit")
    labels = _labels(queue, items)
    held = belief_lease_next(queue_id=queue.pk, user=annotator)
    changed = {held.label.item_id}
    for item in Item.objects.filter(pk__in=changed):
        item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Who?"})
    with pytest.raises(Conflict) as refused:
        belief_review_submit(lease_id=held.pk, user=annotator, human_label="correct")
    assert refused.value.code == "label_stale"
    handed = [target for target, _, _ in _review_all(queue, annotator, 20)]
    assert handed and all(labels[target].item_id not in changed for target in handed)
    assert not BeliefReview.objects.filter(label__item_id__in=changed).exists()


# ---- the judge's clue-graph draft: accept, edit and discard ask what an edit in the clue-graph stage asks




def _written(item, label) -> tuple:
    """What a draft decision may write: the item (version, content), its revisions, the label's reviews and final."""
    item.refresh_from_db()
    return (item.version, item.content(), item.revisions.count(),
            sorted(BeliefReview.objects.filter(label=label).values_list("reviewer_id", "human_label")),
            BeliefLabel.objects.filter(pk=label.pk).values_list("final_label", "final_source").get())


def test_a_draft_decision_asks_the_clue_graph_stage_for_every_action_lease_and_k(annotator, annotator2, researcher):
    """Over (stage, who holds the stage's lease, the draft's k reviews reached) x (accept, edit, discard): each is
    taken exactly when the item is in the clue-graph stage and the decider holds the stage's slot or one is free
    (what an edit there asks, `editable_item`: with k = 1, another annotator's lease refuses it; the draft is
    offered to each annotator of the stage however many decided), and at a version other than the item's is
    refused; a refused one writes nothing, no review either."""
    set_k(Stage.CLUE_GRAPH, 1)
    queue = belief_queue_for(name="drafts", blind=False, reviewers_per_label=1)
    holders = {"the decider": annotator2, "another annotator": annotator, "nobody": None}
    now = timezone.now()
    wrong, n = [], 0
    for stage in (ItemStatus.IMPORTED, ItemStatus.VERIFICATION, ItemStatus.CLUE_GRAPH, ItemStatus.REVIEW):
        for holder, k_reached, action in ((h, k, a) for h in holders for k in (False, True)
                                          for a in ("accept", "edit", "discard")):
            for stale in (False, True):
                n += 1
                (item,) = make_items(1, status=stage, source=f"d{n}")
                label = graph_draft(queue, item)
                AnnotatorLease.objects.update(status=AnnotatorLeaseStatus.RELEASED)  # one open lease per person
                if holders[holder] is not None:
                    AnnotatorLease.objects.create(item=item, stage=Stage.CLUE_GRAPH, annotator=holders[holder],
                                                  leased_at=now, expires_at=now + timedelta(minutes=30))
                if k_reached:  # someone else already decided on the draft: it has its k = 1 reviews
                    BeliefReview.objects.create(label=label, reviewer=researcher, human_label="discarded",
                                                agrees=False, blind=False, via="clue-graph")
                before = _written(item, label)
                case = f"{stage}, lease of {holder}, k reached {k_reached}, {action}, stale {stale}"
                try:
                    belief_draft_resolve(label_id=label.pk, user=annotator2, action=action,
                                         base_version=item.version + (1 if stale else 0))
                except Conflict:
                    taken = False
                else:
                    taken = True
                if taken != (stage == ItemStatus.CLUE_GRAPH and not stale and holder != "another annotator"):
                    wrong.append(f"{case}: {'taken' if taken else 'refused'}")
                after = _written(item, label)
                if not taken and after != before:
                    wrong.append(f"{case}: refused, yet written")
                if taken and (annotator2.pk, {"accept": "draft", "edit": "edited", "discard": "discarded"}[action]) \
                        not in after[3]:
                    wrong.append(f"{case}: taken, no review recorded")
    assert not wrong, "\n".join(wrong)


def test_an_annotator_outside_the_workflow_cannot_discard_a_draft_another_decided_on(annotator, annotator2):
    """The reported case, through the page: a draft reviewed by an annotator (k = 1 reached); a second annotator
    with no lease, the item still imported, posts discard: refused with the reason, no review beyond k."""
    (item,) = make_items(1, status=ItemStatus.IMPORTED, source="dd")
    queue = belief_queue_for(name="drafts", blind=True, reviewers_per_label=1)
    label = graph_draft(queue, item)
    lease = belief_lease_next(queue_id=queue.pk, user=annotator)
    belief_review_submit(lease_id=lease.pk, user=annotator, human_label="draft")
    response = client_for(annotator2).post(reverse("annotation:belief_draft", args=[label.pk]),
                                           {"action": "discard", "base_version": item.version}, follow=True)
    assert response.status_code == 200
    assert f"is in {ItemStatus.IMPORTED.label}, not in {Stage.CLUE_GRAPH.label}" in response.content.decode()
    assert list(BeliefReview.objects.filter(label=label).values_list("reviewer", flat=True)) == [annotator.pk]


@pytest.mark.parametrize("order", ["triage", "audit"])
def test_skip_moves_on_to_another_label_and_the_skipped_one_stays_for_others(annotator, annotator2, order):
    """"Skip to the next label" (the page's release with next=1) hands out another label, every time, in either
    order; the skipped ones are not handed back to the skipper while their time lasts, and go to the others."""
    queue = belief_queue_for(name=f"skips-{order}", order=order, blind=False)
    record_free_text(queue, make_items(6, status=ItemStatus.PUBLISHED, source=f"sk{order}"),
                     [0.3, 0.3, 0.3, 0.6, 0.6, 0.9])
    browser = client_for(annotator)
    lease = belief_lease_next(queue_id=queue.pk, user=annotator)
    seen = [lease.label_id]
    for _ in range(5):
        response = browser.post(reverse("annotation:belief_release", args=[lease.pk]), {"next": "1"})
        assert response.status_code == 302
        lease = BeliefLease.objects.filter(reviewer=annotator, status="leased").get()
        assert lease.label_id not in seen, (seen, lease.label_id)
        seen.append(lease.label_id)
    other = belief_lease_next(queue_id=queue.pk, user=annotator2)
    assert other is not None and other.label_id in seen[:-1]  # a skipped label goes to someone else


def test_skip_moves_on_to_another_item_in_the_workflow(annotator):
    from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, Stage
    from annotation.services import lease_next

    set_k(Stage.VERIFICATION, 1)
    make_items(4, status=ItemStatus.VERIFICATION, source="skw")
    browser = client_for(annotator)
    lease = lease_next(user=annotator, stage=Stage.VERIFICATION)
    seen = [lease.item_id]
    for _ in range(3):
        response = browser.post(reverse("annotation:release", args=[lease.item_id, "verification"]), {"next": "1"})
        assert response.status_code == 302
        lease = AnnotatorLease.objects.get(annotator=annotator, status=AnnotatorLeaseStatus.LEASED)
        assert lease.item_id not in seen and response["Location"].endswith(f"/{lease.item_id}/verify/"), seen
        seen.append(lease.item_id)
