"""Annotator leases (annotation.services.leases): hand-out, expiry, release, k slots, concurrency."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, ItemStatus, Stage
from annotation.services import NoSlot, lease_next, lease_release, leases_expire
from foundation.errors import Invalid

from ..workflow_support import make_items, set_k


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
