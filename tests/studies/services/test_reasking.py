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
from annotation.services import item_revert, item_update
from studies.models import Attempt, AttemptStatus, ParticipantLease, ParticipantLeaseStatus, StudyItem
from studies.selectors.exports import study_export_rows
from studies.selectors.monitor import study_monitor
from studies.selectors.results import study_results
from studies.services import (
    attempt_question,
    attempt_return,
    attempt_screen_out,
    attempt_start,
    attempts_sweep,
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


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_edits_mid_study_then_ask_again_end_with_every_item_rated_on_its_current_content(make_study, seed):
    rng = random.Random(seed)
    study = make_study(n_items=N_ITEMS, per_participant=PER_PARTICIPANT, raters=RATERS, time_limit_seconds=3600)
    item_ids = list(StudyItem.objects.filter(study=study).values_list("item_id", flat=True))
    now, edits, given_back, running = timezone.now(), 0, 0, []
    for n in range(60):
        now += timedelta(seconds=5)
        if running and rng.random() < 0.4:  # a running attempt (maybe holding given-back answers) ends
            _resolve(running.pop(rng.randrange(len(running))), rng, now)
        else:
            attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"p{seed}-{n}").pk)
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
    # The end: the running attempts finish, the last edits' answers are given back, and new participants answer
    # every question until no start finds a full share. (The path taken depends on the ids the database gives,
    # which seed the hand-out: what is asserted holds on every path.)
    now += timedelta(seconds=60)  # after every question shown so far
    for attempt in running:
        for k in range(ParticipantLease.objects.filter(attempt=attempt, status=ACTIVE).count()):
            _answer(attempt, now + timedelta(seconds=k + 1))
    given_back += study_reask_changed_items(study_id=study.pk).answers
    for n in range(40):
        attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"last{seed}-{n}").pk)
        if attempt.status == AttemptStatus.FULL:
            break
        for k in range(PER_PARTICIPANT):
            _answer(attempt, now + timedelta(seconds=k + 1))
        _assert_loads_exact(study)
    assert edits and given_back, "the simulation made no edit or gave nothing back: change its seeds"
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
    assert client.post(reverse("studies_api:study_reask", args=[study.slug])).json() == {"items": 0, "answers": 0, "taken_back": 0}
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
    assert client.post(reverse("studies_api:study_reask", args=[study.slug])).json() == {"items": 2, "answers": 2, "taken_back": 0}
    assert client.post(reverse("studies_api:study_reask", args=[study.slug])).json() == {"items": 0, "answers": 0, "taken_back": 0}
    second = attempt_start(attempt_id=study_join(study=study, participant_id="b").pk)
    assert second.status == AttemptStatus.STARTED  # 3 distinct items with places again: 2 given back, 1 never used
    _assert_loads_exact(study)


def _revert(item_id: int) -> None:
    item = Item.objects.get(pk=item_id)
    first = item.revisions.order_by("number").first()
    item_revert(item_id=item.pk, revision_number=first.number, base_version=item.version)


def _two_items_two_raters_full(make_study):
    """Two items, one question a participant, two raters: four participants answer, the study is full."""
    study = make_study(n_items=2, per_participant=1, raters=2)
    now = timezone.now()
    for n in range(4):
        _answer(attempt_start(attempt_id=study_join(study=study, participant_id=f"full-{n}").pk),
                now + timedelta(seconds=n + 1))
    return study


def test_an_edit_undone_after_ask_again_takes_the_places_back_and_kappa_keeps_the_item(make_study):
    """Ask again gave back an edited item's two answers; the edit is undone, so they are current again: the sweep
    gives them their places back (nobody is asked about the item again), and kappa has both items as before."""
    study = _two_items_two_raters_full(make_study)
    edited = StudyItem.objects.filter(study=study).order_by("pk").first()
    assert study_results(study).kappa_items == 2
    _edit(edited.item_id)
    assert study_reask_changed_items(study_id=study.pk).answers == 2
    _revert(edited.item_id)
    attempts_sweep()
    edited.refresh_from_db()
    assert edited.load == 2 and not ParticipantLease.objects.filter(quota_given_back=True).exists()
    assert attempt_start(attempt_id=study_join(study=study, participant_id="late").pk).status == AttemptStatus.FULL
    assert study_results(study).kappa_items == 2
    _assert_loads_exact(study)


def test_places_filled_before_the_undo_stay_filled_and_ask_again_settles_the_rest(make_study):
    """After ask again one new participant answered the edited content; then the edit is undone: of the two old
    answers (current again) one takes the one open place back; the new answer (now on an earlier content) holds the
    other until ask again gives it back and the second old answer takes it. The item ends with its two raters on its
    current content and the monitor's total never exceeds the answers wanted."""
    study = _two_items_two_raters_full(make_study)
    edited = StudyItem.objects.filter(study=study).order_by("pk").first()
    _edit(edited.item_id)
    study_reask_changed_items(study_id=study.pk)
    newcomer = attempt_start(attempt_id=study_join(study=study, participant_id="new").pk)
    assert newcomer.leases.get().study_item_id == edited.pk
    _answer(newcomer, timezone.now() + timedelta(minutes=1))
    _revert(edited.item_id)
    attempts_sweep()
    edited.refresh_from_db()
    assert edited.load == 2 and ParticipantLease.objects.filter(quota_given_back=True).count() == 1
    # The answer still given back waits for a place: the sweep neither looks at it again nor locks the study.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studies.services.reasking import given_back_reclaim

    with CaptureQueriesContext(connection) as queries:
        assert given_back_reclaim() == 0
    assert len(queries) == 1 and "FOR UPDATE" not in queries[0]["sql"]
    monitor = study_monitor(study)
    assert monitor["answers"] <= monitor["answers_wanted"] == 4 and monitor["reaskable"] == 1
    done = study_reask_changed_items(study_id=study.pk)  # the newcomer's answer, on the undone content, gives its
    assert (done.answers, done.taken_back) == (1, 1)   # place to the second old answer
    edited.refresh_from_db()
    assert edited.load == 2 and _current_answers(study)[edited.pk] == 2
    given_back = ParticipantLease.objects.get(quota_given_back=True)
    assert given_back.attempt_id == newcomer.pk
    assert study_monitor(study)["answers"] == 4
    _assert_loads_exact(study)


def test_a_rejected_item_is_never_handed_out_whatever_places_it_has_open(make_study):
    """An item edited, asked again, then rejected (deleted) has places open: nobody is asked about it again (nor
    about one a dropout left open); the study is full."""
    from annotation.models import ItemStatus

    study = _two_items_two_raters_full(make_study)
    edited = StudyItem.objects.filter(study=study).order_by("pk").first()
    _edit(edited.item_id)
    study_reask_changed_items(study_id=study.pk)
    item = Item.objects.get(pk=edited.item_id)
    item_update(item_id=item.pk, base_version=item.version, changes={}, status=ItemStatus.REJECTED)
    edited.refresh_from_db()
    assert edited.load == 0 and study_monitor(study)["reaskable"] == 0
    late = attempt_start(attempt_id=study_join(study=study, participant_id="late").pk)
    assert late.status == AttemptStatus.FULL and not late.leases.exists()


def test_a_screen_out_after_ask_again_frees_only_the_places_still_held(make_study):
    """A running attempt answered two questions; one item is edited and asked again (that answer's place given
    back); the attempt is then screened out: its other answer and its open question leave the loads, the given-back
    one does not leave twice."""
    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="s").pk)
    now = timezone.now()
    _answer(attempt, now + timedelta(seconds=1))
    _answer(attempt, now + timedelta(seconds=2))
    first = ParticipantLease.objects.filter(attempt=attempt, status=ANSWERED).order_by("position").first()
    _edit(first.item_id)
    assert study_reask_changed_items(study_id=study.pk).answers == 1
    assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 2
    attempt_screen_out(attempt_id=attempt.pk, reason="failed check")
    assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 0
    _assert_loads_exact(study)


def test_places_no_start_can_take_are_named_on_the_monitor(make_study, researcher):
    """Four items, one rater, two questions a participant: after one answer is given back three places are open and
    the next participant takes two, so one place is left that no start can take (a start needs two items). The
    monitor names it as short and says why and what to do; with one question a participant it is taken."""
    from studies.services import study_update

    study = make_study(n_items=4, per_participant=2, raters=1)
    now = timezone.now()
    first = attempt_start(attempt_id=study_join(study=study, participant_id="r1").pk)
    for k in range(2):
        _answer(first, now + timedelta(seconds=k + 1))
    _edit(ParticipantLease.objects.filter(attempt=first).order_by("position").first().item_id)
    study_reask_changed_items(study_id=study.pk)
    second = attempt_start(attempt_id=study_join(study=study, participant_id="r2").pk)
    for k in range(2):
        _answer(second, now + timedelta(seconds=k + 3))
    assert attempt_start(attempt_id=study_join(study=study, participant_id="r3").pk).status == AttemptStatus.FULL
    monitor = study_monitor(study)
    open_items = [p.pk for p in monitor["pool"] if p.quota > p.load]
    assert len(open_items) == 1 and [p.pk for p in monitor["stranded"]] == open_items
    assert [p.pk for p in monitor["short_items"]] == open_items and monitor["stranded_places"] == 1
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("studies:study_monitor", args=[study.slug])).content.decode()
    assert 'id="stranded"' in page and "a participant needs 2 different items with a place" in page
    study_update(study_id=study.pk, per_participant=1)
    study.refresh_from_db()
    assert not study_monitor(study)["stranded"]
    last = attempt_start(attempt_id=study_join(study=study, participant_id="r4").pk)
    assert last.status == AttemptStatus.STARTED and last.leases.get().study_item_id == open_items[0]


@pytest.mark.parametrize("include_rejected", [False, True])
def test_rejected_items_are_handed_out_only_by_a_pool_drawn_with_them(make_study, include_rejected):
    """A study drawing its pool with the rejected items on purpose (`pool_include_rejected`) hands them out; any
    other never does: not the SQL start, not the step by step one (other databases), and the link's room check
    agrees with both."""
    from annotation.models import ItemStatus
    from studies.selectors.participants import study_has_room
    from studies.services.attempts import _attempt_start_locked

    study = make_study(n_items=2, per_participant=1, raters=1, pool_include_rejected=include_rejected)
    for item_id in StudyItem.objects.filter(study=study).values_list("item_id", flat=True):
        item = Item.objects.get(pk=item_id)
        item_update(item_id=item.pk, base_version=item.version, changes={}, status=ItemStatus.REJECTED)
    assert study_has_room(study) is include_rejected
    sql = attempt_start(attempt_id=study_join(study=study, participant_id="sql").pk)
    python = _attempt_start_locked(attempt_id=study_join(study=study, participant_id="py").pk, now=timezone.now())
    expected = AttemptStatus.STARTED if include_rejected else AttemptStatus.FULL
    assert (sql.status, python.status) == (expected, expected)
    assert not study_monitor(study)["short_items"] and not study_monitor(study)["stranded"]
    _assert_loads_exact(study)
