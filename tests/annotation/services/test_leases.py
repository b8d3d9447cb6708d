"""Annotator leases (annotation.services.leases): hand-out, expiry, release, k slots, concurrency.

Annotator leases under a burst of concurrent next-item requests (issue 11: deadlock, two live leases).

Real threads, each with its own PostgreSQL connection, go through the pages (the test
client): several threads per annotator ask for the next item at the same moment while
others submit the item they hold. Before the fix some requests died with
`DeadlockDetected` (the hand-out also locked the joined item rows) and one annotator
could hold two live leases in one stage."""
from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, connections, transaction
from django.db.models import Count, Q
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, Item, ItemStatus, Stage
from annotation.services import NoSlot, lease_next, lease_release, leases_expire
from foundation.errors import Invalid
from tests.annotation.workflow_support import make_items, set_k


@pytest.mark.django_db
def test_next_item_resumes_own_lease_and_skips_taken_items(annotator, annotator2):
    set_k(Stage.VERIFICATION, 1)
    a, b, _ = make_items(3)
    first = lease_next(user=annotator, stage=Stage.VERIFICATION)
    assert first.item == a
    assert lease_next(user=annotator, stage=Stage.VERIFICATION).pk == first.pk  # resumed, not a second item
    assert lease_next(user=annotator2, stage=Stage.VERIFICATION).item == b


@pytest.mark.django_db
def test_stale_lease_comes_back(annotator, annotator2):
    set_k(Stage.VERIFICATION, 1, lease_minutes=5)
    (only,) = make_items(1)
    start = timezone.now()
    lease = lease_next(user=annotator, stage=Stage.VERIFICATION, now=start)
    assert lease_next(user=annotator2, stage=Stage.VERIFICATION, now=start + timedelta(minutes=4)) is None
    later = lease_next(user=annotator2, stage=Stage.VERIFICATION, now=start + timedelta(minutes=6))
    assert later.item == only and later.annotator == annotator2
    assert leases_expire(now=start + timedelta(minutes=6)) == 1
    lease.refresh_from_db()
    assert lease.status == AnnotatorLeaseStatus.RELEASED


@pytest.mark.django_db
def test_released_lease_goes_back_to_the_queue(annotator, annotator2):
    set_k(Stage.VERIFICATION, 1)
    make_items(1)
    lease = lease_next(user=annotator, stage=Stage.VERIFICATION)
    lease_release(item_id=lease.item_id, stage=lease.stage, user=annotator)
    assert lease_next(user=annotator2, stage=Stage.VERIFICATION).item == lease.item


@pytest.mark.django_db
def test_k_annotators_share_an_item_but_never_more(annotator, annotator2, django_user_model):
    set_k(Stage.VERIFICATION, 2)
    (item,) = make_items(1)
    third = django_user_model.objects.create_user("ann3")
    assert lease_next(user=annotator, stage=Stage.VERIFICATION).item == item
    assert lease_next(user=annotator2, stage=Stage.VERIFICATION).item == item
    assert lease_next(user=third, stage=Stage.VERIFICATION) is None


@pytest.mark.django_db
def test_items_outside_the_stage_are_not_handed_out(annotator):
    make_items(2, status=ItemStatus.IMPORTED)
    assert lease_next(user=annotator, stage=Stage.VERIFICATION) is None
    with pytest.raises(Invalid):
        lease_next(user=annotator, stage="published")


@pytest.mark.django_db(transaction=True)
def test_two_annotators_asking_at_the_same_moment_200_times_never_get_the_same_item_stage(annotator, annotator2):
    """Real concurrency: two threads, two database connections, a barrier before every request."""
    set_k(Stage.VERIFICATION, 1)
    make_items(400)
    rounds = 200
    barrier = threading.Barrier(2)
    got: dict[str, list[int]] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def worker(name: str, user) -> None:
        try:
            for _ in range(rounds):
                barrier.wait(timeout=30)
                lease = lease_next(user=user, stage=Stage.VERIFICATION)
                got[name].append(lease.item_id)
                # Keep the item (submitted): every round both ask for a fresh item at once.
                AnnotatorLease.objects.filter(pk=lease.pk).update(status=AnnotatorLeaseStatus.SUBMITTED,
                                                              submitted_at=timezone.now())
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
    assert len(got["a"]) == len(got["b"]) == rounds
    for x, y in zip(got["a"], got["b"]):
        assert x != y
    all_items = got["a"] + got["b"]
    assert len(set(all_items)) == 2 * rounds  # no item-stage was ever handed out twice
    assert AnnotatorLease.objects.filter(stage=Stage.VERIFICATION).count() == 2 * rounds
    assert connection.vendor == "postgresql"


@pytest.mark.django_db
def test_full_items_do_not_hide_free_ones_when_k_is_above_one(annotator, annotator2, django_user_model):
    """With k = 2, many items already done by two others come first: the third annotator still gets a free one."""
    set_k(Stage.VERIFICATION, 2)
    items = make_items(60)
    now = timezone.now()
    for item in items[:-1]:
        for user in (annotator, annotator2):
            AnnotatorLease.objects.create(item=item, stage=Stage.VERIFICATION, annotator=user, leased_at=now,
                                          expires_at=now + timedelta(minutes=30),
                                          status=AnnotatorLeaseStatus.SUBMITTED, submitted_at=now)
    third = django_user_model.objects.create_user("ann3")
    assert lease_next(user=third, stage=Stage.VERIFICATION).item == items[-1]


@pytest.mark.django_db
def test_an_expired_lease_whose_slot_was_taken_cannot_be_submitted(annotator, annotator2):
    from annotation.services import verification_submit

    set_k(Stage.VERIFICATION, 1, lease_minutes=5)
    (item,) = make_items(1)
    start = timezone.now()
    lease_next(user=annotator, stage=Stage.VERIFICATION, now=start)
    assert lease_next(user=annotator2, stage=Stage.VERIFICATION, now=start + timedelta(minutes=6)).item == item
    with pytest.raises(NoSlot):
        verification_submit(item_id=item.pk, user=annotator, decision="keep", criteria=[], item_version=item.version,
                            now=start + timedelta(minutes=7))
    verification_submit(item_id=item.pk, user=annotator2, decision="keep", criteria=[], item_version=item.version,
                        now=start + timedelta(minutes=7))
    item.refresh_from_db()
    assert item.status == ItemStatus.REWRITE
    assert AnnotatorLease.objects.filter(item=item, status=AnnotatorLeaseStatus.SUBMITTED).count() == 1


@pytest.mark.django_db
def test_submitting_another_item_while_holding_an_open_lease_in_the_stage_is_refused(annotator):
    """One open lease per user and stage: the held item is submitted or skipped first (409, nothing written)."""
    from annotation.models import VerificationDecision
    from annotation.services import verification_submit

    set_k(Stage.VERIFICATION, 1)
    a, b = make_items(2)
    assert lease_next(user=annotator, stage=Stage.VERIFICATION).item == a
    with pytest.raises(NoSlot) as refused:
        verification_submit(item_id=b.pk, user=annotator, decision="keep", criteria=[], item_version=b.version)
    assert refused.value.http_status == 409 and str(a) in refused.value.message
    assert not VerificationDecision.objects.exists()
    lease_release(item_id=a.pk, stage=Stage.VERIFICATION, user=annotator)
    verification_submit(item_id=b.pk, user=annotator, decision="keep", criteria=[], item_version=b.version)
    b.refresh_from_db()
    assert b.status == ItemStatus.REWRITE


# --------------------------------------------------------------------------- leases concurrency

USERS, THREADS_PER_USER, ROUNDS, K = 4, 3, 50, 2


def _live_leased_per_user_stage():
    """(annotator, stage) pairs holding more than one live lease."""
    now = timezone.now()
    return list(AnnotatorLease.objects.filter(status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now)
                .values("annotator", "stage").annotate(n=Count("pk")).filter(n__gt=1))


def _slots_over_k(k: int):
    now = timezone.now()
    live = Q(status=AnnotatorLeaseStatus.SUBMITTED) | Q(status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now)
    return list(AnnotatorLease.objects.filter(live).values("item", "stage").annotate(n=Count("pk"))
                .filter(n__gt=k))


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_concurrent_next_item_requests_gives_no_500_and_one_live_lease_per_user_and_stage(
        django_user_model):
    assert connection.vendor == "postgresql"
    set_k(Stage.VERIFICATION, K)
    make_items(400)
    users = [django_user_model.objects.create_user(f"burst{i}") for i in range(USERS)]
    group = Group.objects.get_or_create(name="annotators")[0]
    for user in users:
        user.groups.add(group)
    clients = []
    for user in users:
        for t in range(THREADS_PER_USER):
            client = Client(raise_request_exception=False)
            client.force_login(user)
            clients.append((t, client))
    connections.close_all()

    barrier = threading.Barrier(len(clients))
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    doubles: list = []
    lock = threading.Lock()
    next_url = reverse("annotation:next_item", args=[Stage.VERIFICATION])
    stop = threading.Event()

    def watch() -> None:
        """Look for a user with two live leases in the stage while the burst runs."""
        try:
            while not stop.is_set():
                found = _live_leased_per_user_stage()
                if found:
                    doubles.extend(found)
                time.sleep(0.005)
        finally:
            connections.close_all()

    def worker(role: int, client: Client) -> None:
        try:
            for _ in range(ROUNDS):
                barrier.wait(timeout=60)
                response = client.post(next_url)
                with lock:
                    statuses[response.status_code] += 1
                if response.status_code >= 500:
                    with lock:
                        failures.append(response.content.decode(errors="replace")[:300])
                    continue
                # Thread 0 of each user submits what it was handed (locks the item, then the lease):
                # the order that deadlocked with a hand-out that also locked the item row.
                if role == 0 and response.status_code == 302 and "/verify/" in response["Location"]:
                    pk = int(response["Location"].rstrip("/").split("/")[-2])
                    item = Item.objects.get(pk=pk)
                    submitted = client.post(reverse("annotation:verify", args=[pk]), {
                        "decision": "keep", "comment": "", "item_version": item.version})
                    with lock:
                        statuses[submitted.status_code] += 1
                        if submitted.status_code >= 500:
                            failures.append(submitted.content.decode(errors="replace")[:300])
        except threading.BrokenBarrierError:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(repr(exc))
            barrier.abort()
        finally:
            connections.close_all()

    watcher = threading.Thread(target=watch)
    threads = [threading.Thread(target=worker, args=(role, client)) for role, client in clients]
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()

    requests = sum(statuses.values())
    print(f"\n{requests} requests ({len(clients) * ROUNDS} next-item), statuses {dict(statuses)}, "
          f"{len(failures)} failures, {len(doubles)} sightings of two live leases")
    assert not failures, failures[:3]
    assert not doubles, doubles[:3]
    assert not _live_leased_per_user_stage()
    assert not _slots_over_k(K)
    assert statuses[302] >= len(clients) * ROUNDS  # every next-item request was answered with a page to go to


@pytest.mark.django_db
def test_the_database_refuses_a_second_open_lease_for_one_user_in_one_stage(annotator):
    a, b = make_items(2)
    now = timezone.now()
    AnnotatorLease.objects.create(item=a, stage=Stage.VERIFICATION, annotator=annotator, leased_at=now,
                                  expires_at=now + timedelta(minutes=30))
    with pytest.raises(IntegrityError), transaction.atomic():
        AnnotatorLease.objects.create(item=b, stage=Stage.VERIFICATION, annotator=annotator, leased_at=now,
                                      expires_at=now + timedelta(minutes=30))
    # Another stage, or a lease no longer open, is no conflict.
    AnnotatorLease.objects.create(item=b, stage=Stage.REWRITE, annotator=annotator, leased_at=now,
                                  expires_at=now + timedelta(minutes=30))


@pytest.mark.django_db
def test_an_expired_lease_does_not_block_the_next_one(annotator):
    set_k(Stage.VERIFICATION, 1, lease_minutes=5)
    a, b = make_items(2)
    start = timezone.now()
    first = lease_next(user=annotator, stage=Stage.VERIFICATION, now=start)
    assert first.item == a
    # The lease on a ran out; a was taken by nobody, so the annotator gets a again, or b: never an error.
    again = lease_next(user=annotator, stage=Stage.VERIFICATION, now=start + timedelta(minutes=6))
    assert again is not None and again.pk != first.pk
    first.refresh_from_db()
    assert first.status == AnnotatorLeaseStatus.RELEASED
    assert AnnotatorLease.objects.filter(annotator=annotator, status=AnnotatorLeaseStatus.LEASED).count() == 1
