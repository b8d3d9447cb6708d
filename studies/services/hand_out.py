"""The hand-out of a start on PostgreSQL: one round trip, the study's lock held only while the server runs it.

A class pressing Start at once is served one start after another (every change of an item's load holds the study
row, which is what keeps the quotas exact). What matters then is how long each start holds that row. Done step by
step from Python, it held it across a dozen round trips, each of which waits for a CPU on a busy machine (about
30 ms a start on 2 cores). Here the whole hand-out is one message of three statements, which PostgreSQL runs as one
transaction: lock the attempt, lock the study (lock order: attempt -> study -> items, as everywhere), then a single
statement chooses the items, raises their loads, inserts the leases and starts (or fills) the attempt. The study row
is held from the second statement to the commit, all inside the server: no client round trip while it is held.

Each statement of a READ COMMITTED transaction takes a new snapshot, so the third one, run after the study's lock
was granted, sees every hand-out and release committed before it: the rule of studies.allocation (most remaining
quota first, then items that lost a rater, then the seeded tie-break key) is applied to current loads, exactly as the
Python allocator does under the same lock on other databases.

The study's overdue attempts are released before a hand-out (as under the Python path): the statement does nothing
while the study has any, and says so; the caller releases them and runs it again.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from studies.allocation import MASK, MIX, seed_salt
from studies.models import (
    Attempt,
    AttemptStatus,
    ParticipantLease,
    ParticipantLeaseStatus,
    Study,
    StudyItem,
    StudyStatus,
)

_TABLES = {"attempt": Attempt._meta.db_table, "study": Study._meta.db_table, "item": StudyItem._meta.db_table,
           "lease": ParticipantLease._meta.db_table}



def _tie_key(column: str, salt: str) -> str:
    """studies.allocation.mix(column, salt) in bigint SQL (every operator parenthesized: PostgreSQL gives #, & and >>
    one precedence)."""
    x = f"(({column} # {salt}) & {MASK})"
    for _ in range(2):
        x = f"(((({x} >> 16) # {x}) * {MIX}) & {MASK})"
    return f"(({x} >> 16) # {x})"


# %(name)s are the parameters (psycopg's client-side binding: the message is sent as one simple query).
HAND_OUT_SQL = """
SELECT status FROM {attempt} WHERE id = %(attempt)s FOR UPDATE;
SELECT status FROM {study} WHERE id = %(study)s FOR NO KEY UPDATE;
WITH study AS (
    SELECT per_participant, time_limit_seconds FROM {study} WHERE id = %(study)s AND status = %(open)s
), overdue AS (
    SELECT EXISTS (
        SELECT 1 FROM {attempt} o
        WHERE o.status = %(started)s AND o.deadline < %(overdue_before)s AND o.study_id = %(study)s
    ) AND NOT %(ignore_overdue)s AS found
), attempt AS (
    SELECT id FROM {attempt}
    WHERE id = %(attempt)s AND status IN (%(joined)s, %(full)s) AND EXISTS (SELECT 1 FROM study)
      AND NOT (SELECT found FROM overdue)
), chosen AS (
    SELECT si.id, si.item_id FROM {item} si
    WHERE si.study_id = %(study)s AND si.load < si.quota AND EXISTS (SELECT 1 FROM attempt)
    ORDER BY si.quota - si.load DESC, si.released_at IS NULL, {item_key}, si.id
    LIMIT (SELECT per_participant FROM study)
), enough AS (
    SELECT count(*) = (SELECT per_participant FROM study) AS ok FROM chosen
), taken AS (
    UPDATE {item} si SET load = si.load + 1, released_at = NULL
    FROM chosen WHERE si.id = chosen.id AND (SELECT ok FROM enough)
    RETURNING si.id, si.item_id
), leases AS (
    INSERT INTO {lease} (attempt_id, study_item_id, item_id, position, status, expires_at, created_at,
                         draft_highlights)
    SELECT %(attempt)s, id, item_id,
           row_number() OVER (ORDER BY {order_key}, id) - 1,
           %(active)s, %(now)s + (SELECT time_limit_seconds FROM study) * interval '1 second', %(now)s, '[]'::jsonb
    FROM taken
    RETURNING 1
), updated AS (
    UPDATE {attempt} a
    SET status = CASE WHEN enough.ok THEN %(started)s ELSE %(full)s END,
        started_at = CASE WHEN enough.ok THEN %(now)s END,
        deadline = CASE WHEN enough.ok THEN %(now)s + (SELECT time_limit_seconds FROM study) * interval '1 second' END
    FROM enough
    WHERE a.id IN (SELECT id FROM attempt)
    RETURNING a.status, a.started_at, a.deadline
)
SELECT updated.status, updated.started_at, updated.deadline, (SELECT count(*) FROM leases), (SELECT found FROM overdue)
FROM (SELECT 1) AS one LEFT JOIN updated ON true;
""".format(**_TABLES, item_key=_tie_key("si.id", "%(salt)s"), order_key=_tie_key("id", "%(order_salt)s"))


@dataclass(frozen=True)
class HandOut:
    """What the statement did: the attempt's status before (under its lock) and after, and whether it was held
    back by overdue attempts of the study."""

    status_before: str
    study_status: str
    status: str | None = None          # None: the attempt was left as it was
    started_at: datetime | None = None
    deadline: datetime | None = None
    leases: int = 0
    overdue: bool = False


def hand_out(*, attempt_id: int, study_id: int, seed: str, now: datetime, overdue_before: datetime,
             ignore_overdue: bool = False) -> HandOut:
    """Run the hand-out statement for one attempt (Attempt.DoesNotExist when there is no such attempt).

    `overdue_before`: the deadline before which a running attempt of the study is overdue (now - grace).

    Not inside a transaction of the caller's (the caller's commit would be another round trip with the study's
    lock held), though correct inside one too.
    """
    params = {"attempt": attempt_id, "study": study_id, "now": now, "overdue_before": overdue_before,
              "ignore_overdue": ignore_overdue,
              "salt": seed_salt(seed), "order_salt": seed_salt(f"order:{seed}"),
              "open": StudyStatus.OPEN.value, "started": AttemptStatus.STARTED.value,
              "joined": AttemptStatus.JOINED.value, "full": AttemptStatus.FULL.value,
              "active": ParticipantLeaseStatus.ACTIVE.value}
    with connection.cursor() as cursor:
        cursor.execute(HAND_OUT_SQL, params)
        attempt_row = cursor.fetchone()
        cursor.nextset()
        study_row = cursor.fetchone()
        cursor.nextset()
        status, started_at, deadline, leases, overdue = cursor.fetchone()
    if attempt_row is None:
        raise Attempt.DoesNotExist(f"no attempt {attempt_id}")
    # status None: the attempt was left as it was (already started or ended, the study not open, or, `overdue`,
    # the study had attempts past their deadline: the caller releases them and runs it again).
    return HandOut(attempt_row[0], study_row[0] if study_row else "", status, started_at, deadline, leases,
                   bool(overdue))
