"""Statements PostgreSQL plans once per database connection: PREPARE the first time a connection runs one, then
EXECUTE it with the values.

Django sends every query as text with its values bound on the client (psycopg's ClientCursor), and PostgreSQL plans
it anew each time. For the small fixed reads and writes of a participant's requests, planning is most of the server's
work: the check that a study still has room ran in 0.06 ms and was planned in 0.32 ms (EXPLAIN ANALYZE, a study of
1,563 items). The hottest statements (foundation.prepared_queries, which builds their SQL once per process, and a few
raw ones) are therefore prepared on each connection of the pool, as the start's hand-out is
(studies.services.hand_out): the pool keeps a connection, and its prepared statements, across requests. A connection
that lives for one request only (no pool, CONN_MAX_AGE 0) gets none: preparing would cost it round trips for nothing.

The values go in as literals (the client-side binding every other query uses), in EXECUTE's argument list; the
statement's parameter types are the ones PostgreSQL infers from their places (a column compared with, a LIMIT).
A statement whose parameters it cannot type, or which it refuses as it would refuse a statement's text (SQLSTATE
class 42), is run as plain SQL from then on in this process (said once in the log); any other error (a connection
lost, a query cancelled) is raised as the plain statement's would be. On any other database the SQL runs as it is.

A connection that lost its prepared statements (DISCARD ALL, DEALLOCATE) answers EXECUTE with "no such prepared
statement": nothing ran, and outside a transaction the statement is prepared again and run; inside one the error is
raised (the transaction is aborted), and the next use on that connection prepares it again.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import re
import weakref

from django.db import ProgrammingError, transaction

log = logging.getLogger(__name__)

_NO_SUCH_PREPARED_STATEMENT = "26000"  # invalid_sql_statement_name
_ALREADY_PREPARED = "42P05"  # duplicate_prepared_statement
_REFUSED_CLASS = "42"  # syntax error or access rule violation: a parameter without a type, an ambiguous operator...


#: None: statements are prepared on connections that outlive a request; False inside `plain_statements()`: every
#: statement is sent as its plain SQL; True inside `plain_statements(False)`: prepared on any connection.
_PREPARING: contextvars.ContextVar[bool | None] = contextvars.ContextVar("server_statements_preparing", default=None)


def lasting(connection) -> bool:
    """Whether the connection outlives the request (a pool's, or kept for CONN_MAX_AGE): only then is preparing worth
    its round trips (a connection opened for one request would prepare each statement for one use)."""
    return bool(connection.settings_dict.get("CONN_MAX_AGE")) or getattr(connection, "pool", None) is not None


@contextlib.contextmanager
def plain_statements(plain: bool | None = True):
    """Send every statement as its plain SQL (no PREPARE, no EXECUTE) inside this block: what a test compares with
    the ORM's own SQL. `plain=False`: prepare them on any connection, a lasting one or not (what a test checks);
    `plain=None`: the rule outside such a block."""
    token = _PREPARING.set(None if plain is None else not plain)
    try:
        yield
    finally:
        _PREPARING.reset(token)


def _sqlstate(error: Exception) -> str | None:
    return getattr(error.__cause__, "sqlstate", None) or getattr(error, "sqlstate", None)


def numbered(sql: str) -> tuple[str, int | tuple[str, ...]] | None:
    """The SQL with its placeholders numbered `$1, $2, ...` and `%%` as `%`, with how many `%s` it has, or, for named
    ones (`%(name)s`, each name one parameter however often it appears), their names in the order of their numbers;
    None when it mixes the two or holds any other `%`."""
    parts, count, names, i = [], 0, [], 0
    while (at := sql.find("%", i)) >= 0:
        kind = sql[at + 1:at + 2]
        if kind == "%":
            parts.append(sql[i:at + 1])
            i = at + 2
        elif kind == "s":
            count += 1
            parts.append(f"{sql[i:at]}${count}")
            i = at + 2
        elif kind == "(" and (end := sql.find(")s", at)) > at:
            name = sql[at + 2:end]
            if not re.fullmatch(r"\w+", name):
                return None
            if name not in names:
                names.append(name)
            parts.append(f"{sql[i:at]}${names.index(name) + 1}")
            i = end + 2
        else:
            return None
    if count and names:
        return None
    parts.append(sql[i:])
    return "".join(parts), tuple(names) if names else count


class ServerStatement:
    """One statement (Django's SQL: `%s` placeholders, or named ones), prepared on each PostgreSQL connection that
    runs it."""

    def __init__(self, sql: str, role: str):
        self.sql = sql
        found = numbered(sql)
        self.unpreparable = found is None
        body, shape = found if found else ("", 0)
        self.names: tuple[str, ...] = shape if isinstance(shape, tuple) else ()
        self.placeholders = len(self.names) or shape
        digest = hashlib.md5(body.encode(), usedforsecurity=False).hexdigest()[:12]
        self.name = f"{re.sub(r'[^a-z0-9_]', '_', role.lower())[:40]}_{digest}"
        self.prepare_sql = f"PREPARE {self.name} AS {body}"
        arguments = ", ".join(f"%({name})s" for name in self.names) if self.names else ", ".join(
            ["%s"] * self.placeholders)
        self.execute_sql = f"EXECUTE {self.name}({arguments})" if self.placeholders else f"EXECUTE {self.name}"
        #: The psycopg connections (kept by the pool across requests) that hold this statement.
        self._prepared_on: weakref.WeakSet = weakref.WeakSet()

    def _fits(self, params) -> bool:
        if self.names:
            return isinstance(params, dict) and set(self.names) <= params.keys()
        return not isinstance(params, dict) and len(params) == self.placeholders

    def execute(self, connection, cursor, params) -> None:
        """Run the statement with `params` on `cursor` (of `connection`, Django's wrapper), prepared first if this
        connection does not hold it yet; its rows are read from the cursor as after `cursor.execute`."""
        preparing = _PREPARING.get()
        if (self.unpreparable or connection.vendor != "postgresql" or not self._fits(params)
                or preparing is False or (preparing is None and not lasting(connection))):
            cursor.execute(self.sql, params)
            return
        held = connection.connection
        if held not in self._prepared_on and not self._prepare(connection, cursor):
            cursor.execute(self.sql, params)
            return
        try:
            cursor.execute(self.execute_sql, params or None)
        except ProgrammingError as error:
            if _sqlstate(error) != _NO_SUCH_PREPARED_STATEMENT:
                raise
            self._prepared_on.discard(held)  # nothing ran
            if connection.in_atomic_block:
                raise
            if not self._prepare(connection, cursor):
                cursor.execute(self.sql, params)
                return
            cursor.execute(self.execute_sql, params or None)

    def _prepare(self, connection, cursor) -> bool:
        """PREPARE on this connection (in a savepoint inside a transaction, so that a refusal leaves it usable);
        False when PostgreSQL refused it: the statement is run as plain SQL from then on."""
        try:
            if connection.in_atomic_block:
                with transaction.atomic(using=connection.alias):
                    cursor.execute(self.prepare_sql)
            else:  # autocommit: a refused PREPARE leaves nothing to roll back
                cursor.execute(self.prepare_sql)
        except ProgrammingError as error:  # a lost connection, a cancelled query... are raised as they come
            state = _sqlstate(error) or ""
            if state != _ALREADY_PREPARED:
                if not state.startswith(_REFUSED_CLASS):
                    raise
                self.unpreparable = True
                log.warning("statement %s is run unprepared: PostgreSQL refused to prepare it: %s", self.name, error)
                return False
        self._prepared_on.add(connection.connection)
        return True
