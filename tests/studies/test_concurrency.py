"""Real HTTP against a real threaded server (pytest-django live_server) with concurrent bots."""
from collections import Counter
from datetime import timedelta

import httpx
import pytest
from django.db.models import Count
from django.utils import timezone

from studies.management.bots import StudyBot, run_bots, summarize
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    RefusedAnswer,
    Response,
    StudyItem,
    StudyStatus,
)
from studies.selectors import study_export_rows
from studies.services import attempts_sweep, study_create

from .conftest import import_items

pytestmark = pytest.mark.django_db(transaction=True)


def _study(detectbench_dir, n_items, **fields):
    ids = import_items(detectbench_dir, n_items)
    return study_create(slug=fields.pop("slug", "load"), item_ids=ids, status=StudyStatus.OPEN, completion_code="DONE-42",
                        **fields)


def test_sixty_bots_at_once_fill_exactly_fifty_attempts(live_server, detectbench_dir):
    study = _study(detectbench_dir, 250, per_participant=15, raters=3, time_limit_seconds=3600)
    results = run_bots(live_server.url, study.slug, 60, start_together=True, reload_each_question=False)
    summary = summarize(results)
    print("\n60 bots:", summary)
    outcomes = Counter(r.outcome for r in results)
    assert outcomes == {"complete": 50, "full": 10}, [r.message for r in results if r.outcome == "error"][:3]
    assert all(r.completion_code == "DONE-42" for r in results if r.outcome == "complete")
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == 50
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FULL).count() == 10
    per_item = Response.objects.filter(attempt__study=study).values("item").annotate(
        n=Count("id"), raters=Count("attempt", distinct=True))
    assert len(per_item) == 250
    assert {(row["n"], row["raters"]) for row in per_item} == {(3, 3)}
    assert set(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == {3}
    for attempt in Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED):
        assert attempt.responses.values("item").distinct().count() == 15
    # Never more than `raters` answers + running leases per item (also a CHECK constraint in the database).
    live = ParticipantLease.objects.filter(attempt__study=study).exclude(
        status__in=[ParticipantLeaseStatus.RELEASED, ParticipantLeaseStatus.TIMED_OUT])
    assert max(Counter(live.values_list("item_id", flat=True)).values()) == 3


def test_dropout_after_five_answers_hands_ten_items_to_the_next_bot(live_server, detectbench_dir):
    study = _study(detectbench_dir, 250, per_participant=15, raters=3, time_limit_seconds=3600, slug="drop")
    quitter = StudyBot(live_server.url, study.slug, "quitter", stop_after=5).run()
    assert quitter.outcome == "stopped" and quitter.answered == 5
    attempt = Attempt.objects.get(token=quitter.token)
    unanswered = set(attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).values_list("item_id", flat=True))
    assert len(unanswered) == 10
    # Its deadline passes with the "browser" gone; the sweep closes it.
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    assert attempts_sweep() == [attempt.pk]
    nxt = StudyBot(live_server.url, study.slug, "next").run()
    assert nxt.outcome == "complete"
    got = set(Attempt.objects.get(token=nxt.token).responses.values_list("item_id", flat=True))
    assert unanswered <= got
    rows = [r for r in study_export_rows(study) if r["attempt_id"] == attempt.pk]
    assert sum(r["record"] == "response" for r in rows) == 5
    assert {r["attempt_status"] for r in rows} == {AttemptStatus.EXPIRED}


def test_late_answer_over_http_is_refused_with_409(live_server, detectbench_dir):
    study = _study(detectbench_dir, 10, per_participant=3, raters=1, time_limit_seconds=60, grace_seconds=1,
                   slug="late")
    bot = StudyBot(live_server.url, study.slug, "slow", stop_after=1)
    result = bot.run()
    attempt = Attempt.objects.get(token=result.token)
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    with httpx.Client(base_url=live_server.url) as client:
        client.get(f"/s/{study.slug}/")
        csrf = client.cookies["csrftoken"]
        position = attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).order_by("position").first().position
        response = client.post(f"/s/a/{attempt.token}/answer/", headers={"X-CSRFToken": csrf, "HX-Request": "true"},
                               data={"position": position, "chosen_option": 0, "highlights": "[]"})
    assert response.status_code == 409
    assert "Answers after the deadline are not accepted." in response.text
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.EXPIRED and attempt.refused_answers.filter(reason=RefusedAnswer.Reason.LATE).exists()


def test_concurrent_starts_and_dropouts_still_end_with_every_item_exactly_its_raters(detectbench_dir):
    """Eight threads (each its own database connection) start attempts at once, a third of them dropping out right
    after their start (their items go back to the pool, taken over by later starts), until the study is full: every
    item then ends with exactly its 3 raters, each remaining attempt holds 6 distinct items, and no start ever saw a
    load above its quota (the database check would have failed it)."""
    import random
    import threading

    from django.db import connection

    from studies.services import attempt_return, attempt_start, study_join

    study = _study(detectbench_dir, 40, per_participant=6, raters=3, time_limit_seconds=3600, slug="hammer")
    ids, errors, outcomes = iter(range(10**6)), [], Counter()
    lock, go = threading.Lock(), threading.Barrier(8)

    def participant(rng: random.Random) -> str:
        with lock:
            pid = f"t{next(ids)}"
        attempt = attempt_start(attempt_id=study_join(study=study, participant_id=pid).pk)
        if attempt.status == AttemptStatus.STARTED and rng.random() < 1 / 3:
            attempt_return(attempt_id=attempt.pk)
            return "dropped"
        return attempt.status

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            go.wait(timeout=30)
            while True:
                outcome = participant(rng)
                with lock:
                    outcomes[outcome] += 1
                if outcome == AttemptStatus.FULL:
                    return
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    # 40 items x 3 raters = 120 = 20 attempts x 6: the study is full exactly when 20 attempts hold their items.
    running = Attempt.objects.filter(study=study, status=AttemptStatus.STARTED)
    assert running.count() == 20 and outcomes[AttemptStatus.STARTED] == 20, outcomes
    assert outcomes["dropped"] > 0 and outcomes[AttemptStatus.FULL] == 8
    assert set(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == {3}
    active = ParticipantLease.objects.filter(attempt__study=study, status=ParticipantLeaseStatus.ACTIVE)
    assert set(Counter(active.values_list("item_id", flat=True)).values()) == {3}
    for attempt in running:
        assert attempt.leases.filter(status=ParticipantLeaseStatus.ACTIVE).values("item_id").distinct().count() == 6


@pytest.mark.parametrize("cookie", ["", "a-stale-cookie"])
def test_one_participant_joining_from_eight_browsers_at_once_gets_one_attempt(detectbench_dir, cookie):
    """Eight threads (each its own database connection) join with the same participant and session ids at the same
    instant, twenty times: the losers of the insert's race (the unique participant id) get the winner's attempt, no
    error escapes and each participant has exactly one attempt. New browsers (no cookie) insert first with ON
    CONFLICT DO NOTHING (a loser in flight waits for the winner's commit, then writes nothing). Browsers with a
    cookie (one that opens nothing) read first, then insert: the race is seen to happen, PostgreSQL counting the
    failed inserts as rolled back transactions."""
    import threading
    import time

    from django.db import connection

    from studies.services import study_join

    study = _study(detectbench_dir, 12, per_participant=3, raters=3, time_limit_seconds=3600,
                   slug=f"same-id{'-cookie' if cookie else ''}")
    rounds, threads = 20, 8
    joined: dict[int, list[int]] = {r: [] for r in range(rounds)}
    errors, lock, go = [], threading.Lock(), threading.Barrier(threads)

    def worker() -> None:
        try:
            for r in range(rounds):
                go.wait(timeout=30)
                attempt = study_join(study=study, participant_id=f"same-{r}", session_id=f"session-{r}",
                                     cookie_token=cookie)
                with lock:
                    joined[r].append(attempt.pk)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(repr(error))
            go.abort()
        finally:
            connection.close()

    def counted() -> tuple[int, int]:  # transactions rolled back (an insert that lost the race), attempts inserted
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()")
            rolled_back = cursor.fetchone()[0]
            cursor.execute("SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = %s", [Attempt._meta.db_table])
            return rolled_back, cursor.fetchone()[0]

    before = counted()
    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    lost = inserted = 0
    for _ in range(100):  # the backends report their statistics as they end
        after = counted()
        lost, inserted = after[0] - before[0], after[1] - before[1]
        if (lost if cookie else inserted >= rounds):
            break
        time.sleep(0.05)
    if cookie:
        assert lost >= 1, "no insert lost the race: the path under test never ran"
    else:  # 160 joins, one row kept each participant (an insert killed by the race's winner counts too)
        assert inserted >= rounds, inserted
    stored = Counter(Attempt.objects.filter(study=study).values_list("external_participant_id", flat=True))
    assert stored == {f"same-{r}": 1 for r in range(rounds)}
    for r in range(rounds):
        assert len(joined[r]) == threads and len(set(joined[r])) == 1, joined[r]


def test_a_join_that_loses_the_race_inside_a_callers_transaction_leaves_that_transaction_usable(detectbench_dir):
    """Another connection has inserted the participant's attempt but not committed; a join inside a caller's
    transaction waits on the unique participant id, the other commits, the join's insert fails: it is rolled back to
    its savepoint, the join returns the other's attempt, and the caller's transaction goes on (a query, its commit)."""
    import threading
    import time

    from django.db import connection, transaction

    from studies.services import study_join

    study = _study(detectbench_dir, 6, per_participant=3, raters=3, time_limit_seconds=3600, slug="race-in-tx")
    inserted, done, outcome = threading.Event(), threading.Event(), {}

    def other_browser() -> None:
        try:
            with transaction.atomic():
                outcome["other"] = Attempt.objects.create(study=study, external_participant_id="racer",
                                                          external_session_id="s-racer").pk
                inserted.set()
                deadline = time.monotonic() + 20
                with connection.cursor() as cursor:  # commit once the join is waiting on the unique index
                    outcome["waited"] = False
                    while time.monotonic() < deadline and not done.is_set():
                        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND datname = current_database()")
                        if cursor.fetchone()[0]:
                            outcome["waited"] = True
                            break
                        time.sleep(0.01)
        finally:
            connection.close()

    thread = threading.Thread(target=other_browser)
    thread.start()
    assert inserted.wait(20)
    try:
        with transaction.atomic():
            joined = study_join(study=study, participant_id="racer", session_id="s-racer")
            assert Attempt.objects.filter(study=study).count() == 1  # the caller's transaction still runs queries
    finally:
        done.set()
        thread.join(timeout=30)
    assert outcome["waited"], "the join never waited on the other connection's insert"
    assert joined.pk == outcome["other"]
    assert list(Attempt.objects.filter(study=study).values_list("pk", flat=True)) == [outcome["other"]]
