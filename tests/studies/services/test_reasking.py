"""Items edited mid-study asked again at their current content (studies.services.reasking), simulated with known
truth: participants join, answer, drop out and are screened out while annotators edit items and the researcher
presses "ask again" at random moments; at every step each item's load is exactly its counted answers and running
leases, and at the end every item has its raters on its current content, less only the places still open."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db.models import Count, F, Q
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Item
from annotation.services import item_update
from studies.models import Attempt, AttemptStatus, ParticipantLease, ParticipantLeaseStatus, StudyItem
from studies.selectors.exports import study_export_rows
from studies.selectors.monitor import study_monitor
from studies.services import (
    attempt_question,
    attempt_return,
    attempt_screen_out,
    attempt_start,
    response_submit,
    study_join,
    study_reask_changed_items,
)

pytestmark = pytest.mark.django_db

RATERS, PER_PARTICIPANT, N_ITEMS = 2, 3, 12
ANSWERED, ACTIVE = ParticipantLeaseStatus.ANSWERED, ParticipantLeaseStatus.ACTIVE


def _answer(attempt: Attempt, now) -> None:
    attempt = Attempt.objects.select_related("study").get(pk=attempt.pk)
    question = attempt_question(attempt=attempt, now=now)
    assert question is not None, f"attempt {attempt.pk} ({attempt.status}) has no question left"
    response_submit(token=attempt.token, position=question.lease.position, chosen_option=0, now=now)


def _edit(item_id: int) -> None:
    item = Item.objects.get(pk=item_id)
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " (reworded)"})


def _assert_loads_exact(study) -> None:
    """Every item's load is its answers still holding a place (not given back, not screened out) plus its running
    leases: what the hand-out's exact quotas rest on."""
    counted = Q(leases__status=ANSWERED, leases__quota_given_back=False) | Q(leases__status=ACTIVE)
    rows = StudyItem.objects.filter(study=study).annotate(held=Count("leases", filter=counted))
    assert {r.pk: r.load for r in rows} == {r.pk: r.held for r in rows}


def _current_answers(study) -> dict[int, int]:
    rows = (StudyItem.objects.filter(study=study).annotate(n=Count("leases", filter=Q(
        leases__status=ANSWERED, leases__response__item_version=F("item__content_version")))))
    return {r.pk: r.n for r in rows}


def _resolve(attempt: Attempt, rng: random.Random, now) -> None:
    """A running attempt ends: it answers the rest, is screened out (its answers, given back or not, leave the load
    once), or is returned (its open questions go back)."""
    fate = rng.random()
    if fate < 0.4:
        open_leases = ParticipantLease.objects.filter(attempt=attempt, status=ACTIVE).count()
        for k in range(open_leases):
            _answer(attempt, now + timedelta(seconds=k + 1))
    elif fate < 0.7:
        attempt_screen_out(attempt_id=attempt.pk, reason="failed check")
    else:
        attempt_return(attempt_id=attempt.pk)


@pytest.mark.parametrize("seed", [1, 2, 4, 5, 6, 7])
def test_edits_mid_study_then_ask_again_end_with_every_item_rated_on_its_current_content(make_study, seed):
    rng = random.Random(seed)
    study = make_study(n_items=N_ITEMS, per_participant=PER_PARTICIPANT, raters=RATERS, time_limit_seconds=3600)
    item_ids = list(StudyItem.objects.filter(study=study).values_list("item_id", flat=True))
    now, edits, given_back, running, screened_given_back = timezone.now(), 0, 0, [], 0
    for n in range(80):
        now += timedelta(seconds=5)
        if running and rng.random() < 0.4:  # a running attempt (maybe holding given-back answers) ends
            attempt = running.pop(rng.randrange(len(running)))
            screened_given_back += ParticipantLease.objects.filter(attempt=attempt, quota_given_back=True).count()
            _resolve(attempt, rng, now)
        else:
            attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"p{seed}-{n}").pk)
            if attempt.status == AttemptStatus.FULL:
                if not running:
                    given_back += study_reask_changed_items(study_id=study.pk).answers  # the last edits' answers
                    attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"p{seed}-{n}b").pk)
                    if attempt.status == AttemptStatus.FULL:
                        break
            if attempt.status == AttemptStatus.STARTED:
                k = rng.randint(0, PER_PARTICIPANT)
                for j in range(k):
                    _answer(attempt, now + timedelta(seconds=j + 1))
                if k < PER_PARTICIPANT:
                    running.append(attempt)
        if rng.random() < 0.4:  # half the time an item a running attempt has answered
            held = list(ParticipantLease.objects.filter(attempt__in=running, status=ANSWERED)
                        .values_list("item_id", flat=True))
            _edit(rng.choice(held if held and rng.random() < 0.5 else item_ids))
            edits += 1
        if rng.random() < 0.4:
            given_back += study_reask_changed_items(study_id=study.pk).answers
        _assert_loads_exact(study)
    assert not running, "the simulation ended with attempts running: give it more steps"
    assert edits and given_back and screened_given_back, "the simulation missed a path: change its seeds"
    assert study_reask_changed_items(study_id=study.pk).answers == 0  # nothing left: the end is reached
    assert not ParticipantLease.objects.filter(attempt__study=study, status=ACTIVE).exists()
    current, places = _current_answers(study), {
        r.pk: r.quota - r.load for r in StudyItem.objects.filter(study=study)}
    # Every item: its raters on the content it has now, less the places still open, which fewer distinct items than a
    # participant's share hold (the last start was refused for want of them).
    assert all(current[pk] + places[pk] == RATERS for pk in current), (current, places)
    assert sum(1 for p in places.values() if p) < PER_PARTICIPANT
    monitor = study_monitor(study)
    assert monitor["reaskable"] == 0
    assert {p.pk for p in monitor["short_items"]} <= {pk for pk, p in places.items() if p}


def _one_attempt_answered(make_study, *, raters: int):
    """A study of 3 items, 3 a participant, and one participant who answered all of them."""
    study = make_study(n_items=3, per_participant=3, raters=raters)
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="a").pk)
    now = timezone.now()
    for k in range(3):
        _answer(attempt, now + timedelta(seconds=k + 1))
    return study, attempt


def test_without_ask_again_an_edited_item_stays_short_and_the_monitor_offers_it(make_study, researcher):
    """The defect asked again fixes: the answers on the earlier content used up the item's quota."""
    study, attempt = _one_attempt_answered(make_study, raters=1)
    edited = Item.objects.filter(pk__in=StudyItem.objects.filter(study=study).values("item_id")).order_by("pk")[0]
    _edit(edited.pk)
    assert attempt_start(attempt_id=study_join(study=study, participant_id="b").pk).status == AttemptStatus.FULL
    monitor = study_monitor(study)
    assert [p.item_id for p in monitor["short_items"]] == [edited.pk] and monitor["reaskable"] == 1

    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("studies:study_monitor", args=[study.slug])).content.decode()
    assert 'id="reask"' in page and "1 answer on an earlier content gives its place back" in page
    response = client.post(reverse("studies:study_reask", args=[study.slug]), follow=True)
    assert "1 item(s) will be asked again at their current content" in response.content.decode()
    item = StudyItem.objects.get(study=study, item=edited)
    assert (item.load, item.released_at is not None) == (0, True)
    assert 'id="reask"' not in client.get(reverse("studies:study_monitor", args=[study.slug])).content.decode()
    assert client.post(reverse("studies_api:study_reask", args=[study.slug])).json() == {"items": 0, "answers": 0}
    # The place is open; the answer on the earlier content is kept, marked, and counted apart.
    old = ParticipantLease.objects.get(attempt=attempt, item=edited)
    assert (old.status, old.quota_given_back, old.response.item_version) == (ANSWERED, True, 1)
    counted = {p.item_id: p.n_counted for p in study_monitor(study)["pool"]}
    assert counted[edited.pk] == 0 and sum(counted.values()) == 2
    rows = {(r["item_id"], r["quota_given_back"], r["item_state"]) for r in study_export_rows(study)}
    assert (edited.pk, True, "stale") in rows and sum(1 for r in rows if r[1]) == 1


def test_the_api_asks_again_and_says_how_much(make_study, researcher):
    study, _ = _one_attempt_answered(make_study, raters=2)
    for item_id in StudyItem.objects.filter(study=study).values_list("item_id", flat=True)[:2]:
        _edit(item_id)
    client = Client()
    client.force_login(researcher)
    assert client.post(reverse("studies_api:study_reask", args=[study.slug])).json() == {"items": 2, "answers": 2}
    assert client.post(reverse("studies_api:study_reask", args=[study.slug])).json() == {"items": 0, "answers": 0}
    second = attempt_start(attempt_id=study_join(study=study, participant_id="b").pk)
    assert second.status == AttemptStatus.STARTED  # 3 distinct items with places again: 2 given back, 1 never used
    _assert_loads_exact(study)
