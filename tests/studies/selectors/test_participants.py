"""The participant-facing reads (studies/selectors/participants.py) against the ORM querysets they stand for."""
from __future__ import annotations

import random

from django.db import connection
from django.test.utils import CaptureQueriesContext

from studies.models import StudyItem
from studies.selectors import study_has_room
from studies.selectors.participants import _spare_items


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
