"""Statements prepared on the server: numbered placeholders, prepared once per connection, run again after the
connection lost them, and run as plain SQL when PostgreSQL refuses to prepare them (the transaction stays usable)."""
from __future__ import annotations

import logging

import pytest
from django.db import ProgrammingError, connection, transaction
from django.test.utils import CaptureQueriesContext

from foundation.server_statements import ServerStatement, lasting, numbered, plain_statements

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _prepared_on_any_connection():
    """The suite's connections live for one request (no pool): these tests prepare on them all the same."""
    with plain_statements(False):
        yield


def test_only_a_connection_that_outlives_its_request_prepares_by_itself():
    statement = ServerStatement("SELECT %s::int", "lasting")
    assert not lasting(connection)  # the suite's settings: no pool, CONN_MAX_AGE 0
    with plain_statements(None), CaptureQueriesContext(connection) as ran, connection.cursor() as cursor:
        statement.execute(connection, cursor, [5])
        assert cursor.fetchone() == (5,)
    assert [q["sql"] for q in ran] == ["SELECT 5::int"]
    connection.settings_dict["CONN_MAX_AGE"] = 60
    try:
        assert lasting(connection)
        with plain_statements(None), CaptureQueriesContext(connection) as ran, connection.cursor() as cursor:
            statement.execute(connection, cursor, [6])
            assert cursor.fetchone() == (6,)
        assert ran[-1]["sql"] == f"EXECUTE {statement.name}(6)"
    finally:
        connection.settings_dict["CONN_MAX_AGE"] = 0


def test_placeholders_are_numbered_and_a_literal_percent_kept():
    assert numbered("a = %s AND b LIKE 'x%%' AND c = %s") == ("a = $1 AND b LIKE 'x%' AND c = $2", 2)
    assert numbered("SELECT 1") == ("SELECT 1", 0)
    assert numbered("a = %(x)s OR b = %(y)s OR c = %(x)s") == ("a = $1 OR b = $2 OR c = $1", ("x", "y"))
    assert numbered("a = %s OR b = %(x)s") is None  # both kinds: not a statement Django sends
    assert numbered("a %") is None and numbered("a = %d") is None and numbered("a = %(x") is None


def _sent(ran) -> list[str]:
    """The statements sent, by their first words, without the transaction's own (BEGIN, SAVEPOINT...)."""
    kept = [q["sql"] for q in ran if not q["sql"].startswith(("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"))]
    return [" ".join(sql.split("(")[0].split()[:2]) for sql in kept]


def test_a_statement_is_prepared_once_per_connection_then_executed():
    statement = ServerStatement("SELECT %s::int + 1, 'a%%b'", "sum")
    with CaptureQueriesContext(connection) as ran, connection.cursor() as cursor:
        for value in (1, 41):
            statement.execute(connection, cursor, [value])
            assert cursor.fetchone() == (value + 1, "a%b")
    assert _sent(ran) == [f"PREPARE {statement.name}", f"EXECUTE {statement.name}", f"EXECUTE {statement.name}"]


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_lost_its_statements_prepares_them_again_outside_a_transaction():
    statement = ServerStatement("SELECT %s::int * 2", "double")
    with connection.cursor() as cursor:
        statement.execute(connection, cursor, [2])
        assert cursor.fetchone() == (4,)
        cursor.execute("DEALLOCATE ALL")
        statement.execute(connection, cursor, [3])  # "no such prepared statement": prepared again, then run
        assert cursor.fetchone() == (6,)


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_a_lost_statement_raises_and_the_next_use_prepares_it_again():
    statement = ServerStatement("SELECT %s::int * 3", "triple")
    with connection.cursor() as cursor:
        statement.execute(connection, cursor, [1])
        cursor.execute("DEALLOCATE ALL")
    with pytest.raises(ProgrammingError), transaction.atomic(), connection.cursor() as cursor:
        statement.execute(connection, cursor, [2])
    with transaction.atomic(), connection.cursor() as cursor:
        statement.execute(connection, cursor, [2])
        assert cursor.fetchone() == (6,)


def test_a_statement_postgresql_will_not_prepare_runs_as_plain_sql_and_the_transaction_goes_on(caplog):
    statement = ServerStatement("SELECT %s IS NULL", "untyped")  # PREPARE: could not determine the parameter's type
    with caplog.at_level(logging.WARNING, logger="foundation.server_statements"):
        with transaction.atomic(), connection.cursor() as cursor:
            statement.execute(connection, cursor, ["x"])
            assert cursor.fetchone() == (False,)
            cursor.execute("SELECT 1")  # the transaction is still usable
            assert cursor.fetchone() == (1,)
    assert statement.unpreparable and "run unprepared" in caplog.text
    with CaptureQueriesContext(connection) as ran, connection.cursor() as cursor:
        statement.execute(connection, cursor, [None])
        assert cursor.fetchone() == (True,)
    assert [q["sql"] for q in ran] == ["SELECT NULL IS NULL"]


def test_values_are_literals_never_sql():
    statement = ServerStatement("SELECT count(*) FROM studies_study WHERE slug = %s", "by_slug")
    with connection.cursor() as cursor:
        statement.execute(connection, cursor, ["x'); DROP TABLE studies_study; --"])
        assert cursor.fetchone() == (0,)
        cursor.execute("SELECT count(*) FROM studies_study")
        assert cursor.fetchone() == (0,)


def test_named_placeholders_are_one_parameter_each_however_often_they_appear():
    statement = ServerStatement("SELECT %(a)s::int + %(b)s::int + %(a)s::int", "named")
    with CaptureQueriesContext(connection) as ran, connection.cursor() as cursor:
        for a, b in ((1, 2), (10, 5)):
            statement.execute(connection, cursor, {"a": a, "b": b, "unused": 0})
            assert cursor.fetchone() == (2 * a + b,)
    assert _sent(ran) == [f"PREPARE {statement.name}", f"EXECUTE {statement.name}", f"EXECUTE {statement.name}"]
    assert ran[-1]["sql"] == f"EXECUTE {statement.name}(10, 5)"


def _project_statements() -> dict[str, ServerStatement]:
    """Every statement of the apps prepared on the server: module-level ones, those built once per process by a
    function (the public link's), and those of the prepared queries, inserts and updates."""
    from studies.selectors import participants
    from tests.foundation.test_prepared_queries import _module_level

    found = dict(_module_level(ServerStatement))
    found["studies.selectors.participants._room_statement"] = participants._room_statement()[0]
    found["studies.selectors.participants._entry_statement"] = participants._entry_statement()[0]
    return found


@pytest.mark.parametrize("name", sorted(_project_statements()))
def test_postgresql_prepares_every_statement_of_the_project(name):
    statement = _project_statements()[name]
    assert not statement.unpreparable, name
    with transaction.atomic(), connection.cursor() as cursor:
        assert statement._prepare(connection, cursor), name  # refused: it would run unprepared
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = %s", [statement.name])
        assert cursor.fetchone() == (1,)
