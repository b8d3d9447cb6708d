"""The PostgreSQL hand-out's prepared statements: planned once per connection, whatever the connection already holds.

(Which items and in which order: tests/studies/test_allocation.py compares it with the Python rule.)"""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from studies.models import AttemptStatus
from studies.services import attempt_start, study_join
from studies.services import hand_out as hand_out_module

pytestmark = pytest.mark.django_db


def _held() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE 'studies_hand_out_%'")
        return {row[0] for row in cursor.fetchall()}


def _forget(*, deallocate: bool) -> None:
    """This process forgets that the connection holds the statements (and, `deallocate`, the connection too)."""
    connection.ensure_connection()
    hand_out_module._PREPARED_ON.discard(connection.connection)
    if deallocate:
        with connection.cursor() as cursor:
            for name in _held():
                cursor.execute(f"DEALLOCATE {name}")


def _start(study, pid: str) -> tuple[object, list[str]]:
    attempt = study_join(study=study, participant_id=pid)
    with CaptureQueriesContext(connection) as captured:
        started = attempt_start(attempt_id=attempt.pk)
    return started, [q["sql"] for q in captured.captured_queries]


def test_a_connection_prepares_the_statements_once_then_each_start_is_one_message(make_study):
    study = make_study(n_items=12, per_participant=3, raters=2)
    _forget(deallocate=True)
    first, first_sql = _start(study, "a")
    second, second_sql = _start(study, "b")
    assert first.status == second.status == AttemptStatus.STARTED
    assert any(sql.startswith("PREPARE") for sql in first_sql)
    assert _held() == {statement.name for statement in hand_out_module._STATEMENTS}
    hand_out_sql = [sql for sql in second_sql if "studies_hand_out_" in sql]
    assert len(hand_out_sql) == 1 and hand_out_sql[0].count("EXECUTE") == 3, second_sql
    assert not any("PREPARE" in sql or "pg_prepared_statements" in sql for sql in second_sql)


def test_statements_the_connection_holds_already_are_not_prepared_again(make_study):
    """PREPARE outlives a rolled back transaction: a connection may hold the statements without this process
    knowing it (preparing them again would fail)."""
    study = make_study(n_items=12, per_participant=3, raters=2)
    _start(study, "a")
    _forget(deallocate=False)
    started, sql = _start(study, "b")
    assert started.status == AttemptStatus.STARTED
    assert not any(s.startswith("PREPARE") for s in sql) and any("pg_prepared_statements" in s for s in sql)


def test_a_changed_statement_is_prepared_under_another_name():
    one = hand_out_module._prepared("items", "SELECT 1 FROM t WHERE id = %(study)s")
    other = hand_out_module._prepared("items", "SELECT 2 FROM t WHERE id = %(study)s")
    assert one.name != other.name and one.name.startswith("studies_hand_out_items_")
    assert one.prepare == f"PREPARE {one.name} (bigint) AS SELECT 1 FROM t WHERE id = $1"
    assert one.execute == f"EXECUTE {one.name}(%(study)s)"


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_lost_the_statements_prepares_them_again_and_the_start_goes_through(make_study):
    """DEALLOCATE (or DISCARD ALL) behind this process's back: the start is not refused."""
    study = make_study(n_items=12, per_participant=3, raters=2)
    _start(study, "a")
    with connection.cursor() as cursor:
        for name in _held():
            cursor.execute(f"DEALLOCATE {name}")
    started, sql = _start(study, "b")
    assert started.status == AttemptStatus.STARTED and started.leases.count() == 3
    assert any(s.startswith("PREPARE") for s in sql)
    assert _held() == {statement.name for statement in hand_out_module._STATEMENTS}


@pytest.mark.django_db
def test_the_first_question_is_recorded_as_shown_at_its_items_version_and_in_the_attempts_language(make_study,
                                                                                                   items):
    """The hand-out statement records the content version of the item it returns (one snapshot) and the language the
    page shows it in, on the first lease only; the instance handed back says the same as the rows."""
    from annotation.models import Item
    from annotation.services.items import item_update
    from studies.models import ParticipantLease

    ids = items(6)
    for pk in ids:  # every item at version 2 (a curated pool), translated
        item = Item.objects.get(pk=pk)
        item_update(item_id=pk, base_version=item.version, changes={"translations": {"zh-hans": {
            "context": "故事", "question": "谁", "options": [f"选{i}" for i in range(len(item.options))]}}})
    study = make_study(n_items=6, per_participant=3, raters=1, language="zh-hans")
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="V1").pk)
    rows = list(ParticipantLease.objects.filter(attempt=attempt).order_by("position")
                .values_list("shown_content_version", "shown_language"))
    assert rows == [(2, "zh-hans"), (None, ""), (None, "")]
    first = attempt.handed_out[0]
    assert (first.shown_content_version, first.shown_language, first.item.content_version) == (2, "zh-hans", 2)
