"""The hand-out of a start on PostgreSQL: one round trip, the study's lock held only while the server runs it.

A class pressing Start at once is served one start after another (every change of an item's load holds the study
row, which is what keeps the quotas exact). What matters then is how long each start holds that row. Done step by
step from Python, it held it across a dozen round trips, each of which waits for a CPU on a busy machine (about
30 ms a start on 2 cores). Here the whole hand-out is one message of three statements, which PostgreSQL runs as one
transaction: lock the attempt, lock the study (lock order: attempt -> study -> items, as everywhere), then a single
statement chooses the items, raises their loads, inserts the leases and starts (or fills) the attempt. It returns
the leases and the first question's item (the fields a participant sees), so that the first question's page (the
answer to Start) needs no read of them; that question counts as shown from the start, at the item's content version
read by the same statement (one snapshot: the version of the item returned) and in the attempt's language. The study
row is held from the second statement to the commit, all inside the server: no client round trip while it is held.
The three are prepared statements (PREPARE once per database connection, then EXECUTE): planning the third took
PostgreSQL as long as running it.

Each statement of a READ COMMITTED transaction takes a new snapshot, so the third one, run after the study's lock
was granted, sees every hand-out and release committed before it: the rule of studies.allocation (most remaining
quota first, then items that lost a rater, then the seeded tie-break key) is applied to current loads, exactly as the
Python allocator does under the same lock on other databases.

The study's overdue attempts are released before a hand-out (as under the Python path): the statement does nothing
while the study has any, and says so; the caller releases them and runs it again.
"""
from __future__ import annotations

import hashlib
import re
import weakref
from dataclasses import dataclass
from datetime import datetime

from django.db import ProgrammingError, connection

from annotation.models import Item, ItemStatus
from studies.allocation import MASK, MIX, seed_salt
from studies.content import SHOWN_ITEM_FIELDS
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
           "lease": ParticipantLease._meta.db_table, "shown": Item._meta.db_table}



def _tie_key(column: str, salt: str) -> str:
    """studies.allocation.mix(column, salt) in bigint SQL (every operator parenthesized: PostgreSQL gives #, & and >>
    one precedence). Each step names its input twice, so the text doubles with every step (42 operators for 12):
    fine for the 15 rows of an attempt (their presentation order), not for a study's whole pool (_open_items)."""
    x = f"(({column} # {salt}) & {MASK})"
    for _ in range(2):
        x = _mix_step(x)
    return f"(({x} >> 16) # {x})"


def _mix_step(x: str) -> str:
    return f"(((({x} >> 16) # {x}) * {MIX}) & {MASK})"


def _open_items(salt: str) -> str:
    """The study's open items with their tie key under `salt`: PostgreSQL's own C hash of the id
    (``hashint8extended``; studies.allocation.pg_hash_int8 is the same in Python), one function call per item of
    the pool where the earlier key was a dozen bigint operators. A rejected (deleted) item is never handed out,
    whatever places it has open, unless the study's pool is drawn with the rejected items on purpose
    (`Study.pool_include_rejected`): its ids are read once through the status index and looked up in a hash (a probe of
    the item table per pool item would cost more than the rest of the start)."""
    return f"""(
        SELECT si.id, si.item_id, si.quota - si.load AS remaining, si.released_at IS NULL AS fresh,
               hashint8extended(si.id, {salt}) AS tie
        FROM {{item}} si
        WHERE si.study_id = %(study)s AND si.load < si.quota AND EXISTS (SELECT 1 FROM attempt)
          AND ((SELECT pool_include_rejected FROM study)
               OR si.item_id NOT IN (SELECT id FROM {{shown}} WHERE status = %(rejected)s))
    ) si"""


# %(name)s are the parameters: the statements are prepared with them as $1, $2, ... (_prepared below).
LOCK_ATTEMPT_SQL = "SELECT status FROM {attempt} WHERE id = %(attempt)s FOR UPDATE".format(**_TABLES)
LOCK_STUDY_SQL = "SELECT status FROM {study} WHERE id = %(study)s FOR NO KEY UPDATE".format(**_TABLES)
HAND_OUT_SQL = """
WITH study AS (
    SELECT per_participant, time_limit_seconds, pool_include_rejected FROM {study}
    WHERE id = %(study)s AND status = %(open)s
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
    SELECT si.id, si.item_id FROM {items}
    ORDER BY si.remaining DESC, si.fresh, si.tie, si.id
    LIMIT (SELECT per_participant FROM study)
), enough AS (
    SELECT count(*) = (SELECT per_participant FROM study) AS ok FROM chosen
), taken AS (
    UPDATE {item} si SET load = si.load + 1, released_at = NULL
    WHERE si.id = ANY(ARRAY(SELECT id FROM chosen)) AND (SELECT ok FROM enough)
    RETURNING si.id, si.item_id
), leases AS (
    INSERT INTO {lease} (attempt_id, study_item_id, item_id, position, status, expires_at, created_at, shown_at,
                         shown_content_version, shown_language, draft_highlights)
    SELECT %(attempt)s, ordered.id, ordered.item_id, position,
           %(active)s, %(now)s + (SELECT time_limit_seconds FROM study) * interval '1 second', %(now)s,
           CASE WHEN position = 0 THEN %(now)s END,
           CASE WHEN position = 0 THEN shown_item.content_version END,
           CASE WHEN position = 0 THEN %(language)s ELSE '' END, '[]'::jsonb
    FROM (SELECT id, item_id, row_number() OVER (ORDER BY {order_key}, id) - 1 AS position FROM taken) ordered
    JOIN {shown} shown_item ON shown_item.id = ordered.item_id
    RETURNING id, study_item_id, item_id, position
), updated AS (
    UPDATE {attempt} a
    SET status = CASE WHEN enough.ok THEN %(started)s ELSE %(full)s END,
        started_at = CASE WHEN enough.ok THEN %(now)s END,
        deadline = CASE WHEN enough.ok THEN %(now)s + (SELECT time_limit_seconds FROM study) * interval '1 second' END
    FROM enough
    WHERE a.id IN (SELECT id FROM attempt)
    RETURNING a.status, a.started_at, a.deadline
)
SELECT updated.status, updated.started_at, updated.deadline, (SELECT found FROM overdue),
       (SELECT array_agg(ARRAY[id, study_item_id, item_id] ORDER BY position) FROM leases),
       {first_columns}
FROM (SELECT 1) AS one LEFT JOIN updated ON true
LEFT JOIN {shown} first ON first.id = (SELECT item_id FROM leases WHERE position = 0)
""".format(**_TABLES, items=_open_items("%(salt)s").format(**_TABLES),
           order_key=_tie_key("id", "%(order_salt)s"),
           first_columns=", ".join(f"first.{Item._meta.get_field(name).column}" for name in SHOWN_ITEM_FIELDS[1:]))


@dataclass(frozen=True)
class HandOut:
    """What the statement did: the attempt's status before (under its lock) and after, and whether it was held
    back by overdue attempts of the study."""

    status_before: str
    study_status: str
    status: str | None = None          # None: the attempt was left as it was
    started_at: datetime | None = None
    deadline: datetime | None = None
    overdue: bool = False
    #: The leases inserted, in presentation order: (lease id, study item id, item id) each. The first one's question
    #: is shown at once (its shown_at is the start's `now`), the others' shown_at is empty.
    leases: tuple[tuple[int, int, int], ...] = ()
    #: The first question's item (position 0), with only the fields a participant sees
    #: (studies.content.SHOWN_ITEM_FIELDS): the page that answers Start needs no read of it.
    first_item: Item | None = None


#: The values that change from one start to the next, with their SQL types: the prepared statements' parameters.
_PARAMETERS = {"attempt": "bigint", "study": "bigint", "now": "timestamptz", "overdue_before": "timestamptz",
               "ignore_overdue": "boolean", "salt": "bigint", "order_salt": "bigint", "language": "text"}
#: The statuses, written into the statements as literals (fixed for a process).
_CONSTANTS = {"open": StudyStatus.OPEN.value, "started": AttemptStatus.STARTED.value,
              "joined": AttemptStatus.JOINED.value, "full": AttemptStatus.FULL.value,
              "active": ParticipantLeaseStatus.ACTIVE.value, "rejected": ItemStatus.REJECTED.value}


@dataclass(frozen=True)
class _Prepared:
    name: str
    prepare: str      # PREPARE name (types) AS statement with $1, $2, ...
    execute: str      # EXECUTE name(%(parameter)s, ...)


def _prepared(role: str, sql: str) -> _Prepared:
    """A statement prepared under a name that changes with its text (a changed statement is never run under an
    old definition that a connection still holds)."""
    used: list[str] = []

    def placeholder(match: re.Match) -> str:
        name = match.group(1)
        if name in _CONSTANTS:
            assert re.fullmatch(r"[a-z_]+", _CONSTANTS[name])
            return f"'{_CONSTANTS[name]}'"
        if name not in used:
            used.append(name)
        return f"${used.index(name) + 1}"

    body = re.sub(r"%\((\w+)\)s", placeholder, sql)
    name = f"studies_hand_out_{role}_{hashlib.md5(body.encode(), usedforsecurity=False).hexdigest()[:10]}"
    types = ", ".join(_PARAMETERS[p] for p in used)
    return _Prepared(name, f"PREPARE {name} ({types}) AS {body}",
                     f"EXECUTE {name}({', '.join(f'%({p})s' for p in used)})")


_STATEMENTS = (_prepared("attempt", LOCK_ATTEMPT_SQL), _prepared("study", LOCK_STUDY_SQL),
               _prepared("items", HAND_OUT_SQL))
#: The one message a start sends: the three statements run as one transaction (a simple query), planned once per
#: connection instead of once per start (planning the third was half of PostgreSQL's CPU for a start).
_EXECUTE = ";\n".join(statement.execute for statement in _STATEMENTS)
#: The database connections (psycopg's, which the pool keeps across requests) that hold the prepared statements.
_PREPARED_ON: weakref.WeakSet = weakref.WeakSet()
_NO_SUCH_PREPARED_STATEMENT = "26000"  # invalid_sql_statement_name


def _prepare(cursor) -> None:
    """Prepare the statements on this connection, once (those it holds already are kept: PREPARE outlives a
    rolled back transaction, so a connection may hold some that this process never recorded)."""
    held = connection.connection
    if held in _PREPARED_ON:
        return
    names = [statement.name for statement in _STATEMENTS]
    cursor.execute("SELECT name FROM pg_prepared_statements WHERE name = ANY(%s)", [names])
    present = {row[0] for row in cursor.fetchall()}
    missing = [statement.prepare for statement in _STATEMENTS if statement.name not in present]
    if missing:
        cursor.execute(";\n".join(missing))
    _PREPARED_ON.add(held)


def hand_out(*, attempt_id: int, study_id: int, seed: str, now: datetime, overdue_before: datetime,
             language: str = "", ignore_overdue: bool = False) -> HandOut:
    """Run the hand-out statement for one attempt (Attempt.DoesNotExist when there is no such attempt).

    `overdue_before`: the deadline before which a running attempt of the study is overdue (now - grace).
    `language`: the one the first question is shown in (the study's language for the attempt), recorded on its lease.

    Not inside a transaction of the caller's (the caller's commit would be another round trip with the study's
    lock held), though correct inside one too.
    """
    params = {"attempt": attempt_id, "study": study_id, "now": now, "overdue_before": overdue_before,
              "ignore_overdue": ignore_overdue,
              "salt": seed_salt(seed), "order_salt": seed_salt(f"order:{seed}"), "language": language}
    with connection.cursor() as cursor:
        _prepare(cursor)
        try:
            cursor.execute(_EXECUTE, params)
        except ProgrammingError as error:
            if getattr(error.__cause__, "sqlstate", None) != _NO_SUCH_PREPARED_STATEMENT:
                raise
            # The connection lost them (DEALLOCATE, DISCARD ALL): nothing ran. Prepared again at the next start,
            # or now when no transaction of the caller's was aborted by the error.
            _PREPARED_ON.discard(connection.connection)
            if connection.in_atomic_block:
                raise
            _prepare(cursor)
            cursor.execute(_EXECUTE, params)
        attempt_row = cursor.fetchone()
        cursor.nextset()
        study_row = cursor.fetchone()
        cursor.nextset()
        status, started_at, deadline, overdue, leases, *shown = cursor.fetchone()
    if attempt_row is None:
        raise Attempt.DoesNotExist(f"no attempt {attempt_id}")
    # status None: the attempt was left as it was (already started or ended, the study not open, or, `overdue`,
    # the study had attempts past their deadline: the caller releases them and runs it again).
    leases = tuple(tuple(lease) for lease in leases or ())
    return HandOut(attempt_row[0], study_row[0] if study_row else "", status, started_at, deadline, bool(overdue),
                   leases, _shown_item(leases[0][2], shown) if leases else None)


def _shown_item(item_id: int, values: list) -> Item:
    """The first question's item from the statement's columns, converted as the ORM converts them (JSON)."""
    fields = [Item._meta.get_field(name) for name in SHOWN_ITEM_FIELDS[1:]]
    converted = [field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
                 for field, value in zip(fields, values)]
    return Item.from_db(connection.alias, list(SHOWN_ITEM_FIELDS), [item_id, *converted])
