"""200 simultaneous "next label" requests by two reviewers (real threads, real connections, the
HTTP API): no label goes to both, the lowest-belief order and the random share hold."""
import random
import threading

import pytest
from django.db import connection, connections
from django.test import Client
from django.urls import reverse

from annotation import review_order
from annotation.models import BeliefLabel, BeliefLease, BeliefQueue, BeliefReview
from annotation.services.belief import belief_queue_for

from .support import record_free_text

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
