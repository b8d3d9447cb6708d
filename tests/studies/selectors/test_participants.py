"""The participant-facing reads (studies/selectors/participants.py) against the ORM querysets they stand for."""
from __future__ import annotations

import random
from collections import Counter

from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from studies.models import StudyItem, StudyStatus
from studies.selectors import study_entry, study_has_room
from studies.selectors.participants import Entry, _spare_items, study_entry_step_by_step
from studies.services import study_join


def test_whether_a_study_has_room_is_what_the_orm_counts_over_random_loads_and_needs(make_study):
    """Random loads (each within its quota), every need from 1 to past the pool: the prepared count agrees with the
    queryset it stands for and with a count in Python, at the edges (spare items exactly the need, one short) too."""
    study, other = make_study(n_items=12, raters=3), make_study(n_items=12, raters=3)
    rng = random.Random(7)
    edges = 0
    for _ in range(25):
        for pool in (study, other):  # another study's spare items never count for this one
            for row in StudyItem.objects.filter(study=pool):
                row.load = rng.choice([row.quota, row.quota, rng.randint(0, row.quota)])
                row.save(update_fields=["load"])
        spare = sum(1 for row in StudyItem.objects.filter(study=study) if row.load < row.quota)
        for needed in range(1, 14):
            study.per_participant = needed
            with CaptureQueriesContext(connection) as ran:
                room = study_has_room(study)
            # One statement counts (prepared on this connection the first time: a savepoint around its PREPARE).
            assert len([q for q in ran if not q["sql"].startswith(("SAVEPOINT", "PREPARE", "RELEASE"))]) == 1
            assert room == (len(_spare_items(study.pk)[:needed]) >= needed) == (spare >= needed), (spare, needed)
            edges += needed in (spare, spare + 1)
    assert edges >= 40  # the edges were met, not only the easy cases


def _entry(found):
    return None if found is None else (found.entry, found.study.pk, found.attempt.pk if found.attempt else None)


def test_the_one_statement_entry_leads_where_the_three_reads_lead_over_random_links(make_study):
    """Random studies (open, closed, full), attempts (with and without participant and session ids) and links (the
    browser's cookie, its own or another's, participant and session ids matching or not, padded, too long, empty):
    PostgreSQL's one statement gives what the three reads give, in one round trip."""
    rng = random.Random(11)
    studies = [make_study(n_items=6, per_participant=3, raters=2), make_study(n_items=6, per_participant=3, raters=2),
               make_study(n_items=4, per_participant=3, raters=1, status=StudyStatus.CLOSED)]
    attempts = []
    for study in studies[:2]:
        for n in range(4):
            pid = ["", f"P{n}", f"P{n}", "x" * 100][n]
            attempts.append(study_join(study=study, participant_id=pid, session_id=["", "", f"S{n}", "S"][n]))
    StudyItem.objects.filter(study=studies[1]).update(load=F("quota"))  # full
    pids = ["", "P1", "P2", " P2 ", "P9", "x" * 100, "x" * 120, "{{%PROLIFIC_PID%}}"]
    sessions = ["", "S1", "S2", "S9", "S" + "z" * 120]
    kinds = Counter()
    pool = list(StudyItem.objects.filter(study=studies[0]))
    for _ in range(400):
        if rng.random() < 0.2:  # the first study's spare items around its need (3): one short, exactly, more
            spare = rng.randint(1, 5)
            for n, row in enumerate(pool):
                row.load = 0 if n < spare else row.quota
            StudyItem.objects.bulk_update(pool, ["load"])
        study = rng.choice(studies)
        cookie = rng.choice(["", "no-such-token", *(a.token for a in attempts)])
        link = {"slug": rng.choice([study.slug] * 5 + ["no-such-study"]), "participant_id": rng.choice(pids),
                "session_id": rng.choice(sessions), "cookie_token": cookie}
        with CaptureQueriesContext(connection) as ran:
            found = study_entry(**link)
        expected = study_entry_step_by_step(**link)
        assert _entry(found) == _entry(expected), link
        if found is not None and found.entry != Entry.RESUME and connection.vendor == "postgresql":
            assert len([q for q in ran if not q["sql"].startswith(("SAVEPOINT", "PREPARE", "RELEASE"))]) == 1
        kinds[None if found is None else found.entry] += 1
    assert set(kinds) == {None, *Entry}, kinds  # every way a link can lead was met
    assert kinds[Entry.FULL] > 15 and kinds[Entry.CONSENT] > 15, kinds
