"""The writers of a chunk's result rows (evaluation.execution.rows): PostgreSQL's COPY and the statement built once
for the embedded mode write exactly the rows Django's own upsert (bulk_create with update_conflicts) writes, for
every field of Result, first as inserts and then as updates of the same (run, item, sample)."""
import asyncio
import dataclasses
import json

import pytest
from django.db import transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluation.execution import chunks as execution
from evaluation.execution import rows
from evaluation.execution.planning import JobPlanner
from evaluation.model_calls.engine import Engine
from evaluation.models import Result
from evaluation.prompting.methods import get_method
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db

_COMPARED = [f.attname for f in Result._meta.concrete_fields if f.attname not in ("id", "run_id", "created_at",
                                                                                   "updated_at")]
#: Django's upsert overwrites every field; ours adds these to the row's own (a row asked again keeps its spend).
_OVERWRITTEN = [name for name in _COMPARED if name not in rows.ACCUMULATED_FIELDS]


def _results(run):
    jobs = JobPlanner.for_run(run).jobs([(i, s) for i in run.item_ids for s in range(run.rows_per_item)])
    found = []
    engine = Engine(method=get_method(run.method), client=execution.make_client(run.endpoint, seed=run.seed),
                    k=run.k, concurrency=8)
    asyncio.run(engine.run(jobs, on_result=found.append))
    return found


def _orm_upsert(result_rows):
    Result.objects.bulk_create(result_rows, update_conflicts=True, unique_fields=["run", "item", "sample_index"],
                               update_fields=rows.RESULT_FIELDS)


def _written(run, fields=_COMPARED):
    return {(r["item_id"], r["sample_index"]): r for r in Result.objects.filter(run=run).values(*fields)}


def _accumulated(run):
    return _written(run, ["item_id", "sample_index", *rows.ACCUMULATED_FIELDS])


def test_every_writer_writes_the_rows_the_orm_writes(sample_items):
    endpoint = services.endpoint_for_cli(builtin="lexical")
    runs = [services.run_launch(endpoint=endpoint, method="naive-key-info", ids=[i.pk for i in sample_items][:12],
                                samples=2, enqueue=False) for _ in range(3)]
    results = _results(runs[0])
    assert len(results) == 24 and any(r.outcome.key_information for r in results)
    # A failed row too (no outcome): its error columns.
    results[5] = dataclasses.replace(results[5], outcome=None, error="HTTP 500 (attempt 3)", error_class="http_500")
    writers = {runs[0].pk: _orm_upsert, runs[1].pk: rows._upsert_rows_postgresql, runs[2].pk: rows._upsert_rows_executemany}
    created = {}
    for first in (True, False):
        for run in runs:
            batch = results if first else [dataclasses.replace(r, attempts=r.attempts + 7) for r in results]
            with transaction.atomic():
                if writers[run.pk] is _orm_upsert:
                    writers[run.pk]([rows.result_row(run, r) for r in batch])
                else:  # they take the values as write_results gives them
                    writers[run.pk]([rows.result_values(run, r) for r in batch])
        written = [_written(run, _OVERWRITTEN) for run in runs]
        assert len(written[0]) == 24
        assert written[1] == written[0] and written[2] == written[0]
        if first:
            assert _accumulated(runs[1]) == _accumulated(runs[0]) == _accumulated(runs[2])
            once = _accumulated(runs[0])
        else:  # the same batch again: ours add up its spend, Django's overwrote it
            twice = {key: {**row, **{name: 2 * row[name] for name in rows.ACCUMULATED_FIELDS}}
                     for key, row in once.items()}
            assert _accumulated(runs[0]) == once and _accumulated(runs[1]) == twice == _accumulated(runs[2])
        now = {run.pk: dict(Result.objects.filter(run=run).values_list("pk", "created_at")) for run in runs}
        assert created in ({}, now)  # an update keeps when the row was first written
        created = now
    assert {r["attempts"] for r in written[0].values()} >= {8}  # the second writes updated the rows
    assert any(row["spent_tokens_in"] for row in once.values()), "the batch spent nothing: the sums test nothing"


def _sqlite_connection():
    """A SQLite connection of the embedded mode's kind (not opened: preparing values needs only its operations)."""
    from django.db.utils import ConnectionHandler

    return ConnectionHandler({"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}})["default"]


def _orm_prepared(row: dict, conn) -> tuple:
    """What Django's insert sends for a Result made from ``row``: pre_save, then get_db_prep_save, field by field."""
    instance = Result(**row)
    return tuple(f.get_db_prep_save(f.pre_save(instance, True), conn) for f in rows._COPY_FIELDS)


def _comparable(field, value):
    if field.get_internal_type() == "JSONField":  # SQLite: text; PostgreSQL: psycopg's Jsonb wrapper
        return json.loads(value) if isinstance(value, str) else value.obj
    return value


def _as_other_types(field, value):
    """Values of other Python types that the field takes for ``value`` (an int for a float, a bool for an int...)."""
    kind = (field.target_field if field.is_relation else field).get_internal_type()
    if isinstance(value, bool) and kind == "BooleanField":
        return [int(value)]
    if isinstance(value, int) and not isinstance(value, bool) and kind.endswith(("IntegerField", "AutoField")):
        return [float(value), str(value), *([bool(value)] if value in (0, 1) else [])]
    if isinstance(value, float) and kind == "FloatField":
        return [int(value), str(value)] if value == int(value) else [str(value)]
    if isinstance(value, str) and kind in ("CharField", "TextField"):
        return [StrSubclass(value)]
    return []


class StrSubclass(str):
    pass


def test_the_embedded_writer_prepares_every_column_as_the_orm_does(sample_items):
    """rows.prepared_values, which the embedded mode's writer sends to SQLite instead of making a Result and asking
    each field, gives what the ORM's insert gives, for every concrete field of Result (found from the model), on
    SQLite and on PostgreSQL: a row's own values; for each field in turn, the value left out (the field's default)
    and each value of another Python type the field takes; and the insert times (the write's own, as pre_save sets
    them)."""
    from django.db import connection

    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive-key-info",
                              ids=[i.pk for i in sample_items][:3], samples=2, enqueue=False)
    results = _results(run)
    results[1] = dataclasses.replace(results[1], outcome=None, error="HTTP 500 (attempt 3)", error_class="http_500")
    base = [rows.result_values(run, result) for result in results]
    values = list(base)
    for field in rows._COPY_FIELDS:
        name = field.attname
        for row in base:
            if name not in ("run_id", "item_id", "item_version"):  # required: the rest have defaults
                values.append({k: v for k, v in row.items() if k != name})
            if name in row:
                values += [{**row, name: other} for other in _as_other_types(field, row[name])]
    stamped = [f for f in rows._COPY_FIELDS if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)]
    assert {f.attname for f in stamped} == {"created_at", "updated_at"}
    assert len(values) > 6 * len(rows._COPY_FIELDS)
    for conn in (connection, _sqlite_connection()):
        before = stamped[0].get_db_prep_save(timezone.now(), conn)
        fast = rows.prepared_values(values, conn)
        after = stamped[0].get_db_prep_save(timezone.now(), conn)
        for row, got in zip(values, fast, strict=True):
            expected = _orm_prepared(row, conn)
            for field, mine, orm in zip(rows._COPY_FIELDS, got, expected, strict=True):
                if field in stamped:  # the write's time (the ORM's is its own moment): the type and the moment
                    assert type(mine) is type(orm) and before <= mine <= after, (conn.vendor, field.attname)
                else:
                    assert _comparable(field, mine) == _comparable(field, orm), (conn.vendor, field.attname, mine, orm)
                    assert type(mine) is type(orm) or field.get_internal_type() == "JSONField", (field.attname, mine)


def test_new_rows_are_copied_straight_in_and_a_row_there_already_falls_back_to_the_upsert(sample_items):
    """A batch of new rows is COPYed into the table itself (no session table); should one of its (run, item, sample)
    be there after all, the COPY leaves nothing and the upsert writes the batch: every row once, the one that was
    there updated, the rows written exactly as Django's upsert writes them."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (DATABASE_URL): the COPY path is PostgreSQL's")
    endpoint = services.endpoint_for_cli(builtin="lexical")
    runs = [services.run_launch(endpoint=endpoint, method="naive", ids=[i.pk for i in sample_items][:10],
                                samples=1, enqueue=False) for _ in range(2)]
    results = _results(runs[0])
    # runs[1]: one of the ten rows is there already (written by "another execution"), with other values.
    with transaction.atomic():
        rows._upsert_rows_postgresql([rows.result_values(runs[1], dataclasses.replace(results[2], attempts=99))])
    with CaptureQueriesContext(connection) as statements:
        with transaction.atomic():
            rows._insert_rows_postgresql([rows.result_values(runs[1], r) for r in results])
    assert any("INSERT INTO" in q["sql"] and "ON CONFLICT" in q["sql"] for q in statements)  # it fell back
    with transaction.atomic():
        _orm_upsert([rows.result_row(runs[0], r) for r in results])
    assert _written(runs[1], _OVERWRITTEN) == _written(runs[0], _OVERWRITTEN)
    there = (results[2].job.item_id, results[2].job.sample_index)  # written twice: its spend twice
    assert {key: row for key, row in _accumulated(runs[1]).items() if key != there} == {
        key: row for key, row in _accumulated(runs[0]).items() if key != there}
    assert _accumulated(runs[1])[there]["spent_tokens_in"] == 2 * _accumulated(runs[0])[there]["spent_tokens_in"]
    assert Result.objects.filter(run=runs[1]).count() == 10
    # A batch of new rows only: straight in, no session table and no upsert.
    runs.append(services.run_launch(endpoint=endpoint, method="naive", ids=[i.pk for i in sample_items][:10],
                                    samples=1, enqueue=False))
    with CaptureQueriesContext(connection) as statements:
        rows.write_results(runs[2], results, "lexical")
    assert not any("INSERT" in q["sql"] or "TEMP TABLE" in q["sql"] for q in statements), statements.captured_queries
    assert _written(runs[2]) == _written(runs[0])
    # Rows the chunk knew were there (failed rows asked again) go through the upsert at once.
    with CaptureQueriesContext(connection) as statements:
        rows.write_results(runs[2], [dataclasses.replace(r, attempts=5) for r in results],
                           "lexical", existing={(results[0].job.item_id, results[0].job.sample_index)})
    assert any("ON CONFLICT" in q["sql"] for q in statements)
    assert {r.attempts for r in Result.objects.filter(run=runs[2])} == {5}


def test_the_large_columns_of_a_row_are_compressed_with_lz4():
    """Migration 0012: a row's messages and raw output are compressed with lz4 (pglz cost PostgreSQL a fifth of its
    CPU per row); the server here has it, so a missing lz4 would be a fault of the migration, not of the server."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (DATABASE_URL)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT attname, attcompression FROM pg_attribute WHERE attrelid = 'evaluation_result'::regclass "
                       "AND attname IN ('messages', 'raw_output')")
        assert dict(cursor.fetchall()) == {"messages": "l", "raw_output": "l"}


# What an endpoint may send that PostgreSQL cannot keep as it is: each reply of this battery must become a stored
# row (the run finishes, and running it again asks nothing), never an error that stops the chunk and is retried.
_HOSTILE_REPLIES = {
    "nul in the text": {"content": "### Answer:\n1\u0000 because"},
    "lone surrogate in the text": {"content": "### Key Information:\nthe knife \ud800\n\n### Answer:\n2"},
    "nul in the finish reason": {"content": "### Answer:\n1", "finish_reason": "st\u0000op"},
    "huge usage": {"content": "### Answer:\n1", "usage": {"prompt_tokens": 10**40, "completion_tokens": 1e300}},
    "negative usage": {"content": "### Answer:\n1", "usage": {"prompt_tokens": -5, "completion_tokens": -1}},
    "usage that is no count": {"content": "### Answer:\n1", "usage": {"prompt_tokens": "12", "completion_tokens": 2.5}},
    "usage that is no object": {"content": "### Answer:\n1", "usage": [1, 2]},
    "an error whose text holds a nul": {"status": 400, "error": "bad \u0000 request \udc80"},
}


def _hostile_body(kind: str) -> tuple[int, bytes]:
    reply = _HOSTILE_REPLIES[kind]
    if "status" in reply:
        return reply["status"], json.dumps({"error": {"message": reply["error"], "type": "invalid_request"}}).encode()
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply["content"]},
                         "finish_reason": reply.get("finish_reason", "stop")}],
            "usage": reply.get("usage", {"prompt_tokens": 3, "completion_tokens": 2})}
    return 200, json.dumps(body).encode()  # json escapes the NUL and the surrogate as \u0000, \ud800


@pytest.mark.django_db(transaction=True)
def test_every_reply_of_a_hostile_endpoint_is_stored_and_never_asked_again(sample_items, monkeypatch):
    import http.server
    import threading

    monkeypatch.setenv("STANDIN_KEY", "x")
    kinds, served = list(_HOSTILE_REPLIES), []

    class Hostile(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            kind = kinds[len(served) % len(kinds)]
            served.append(kind)
            status, body = _hostile_body(kind)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = services.endpoint_create(name="hostile", base_url=f"http://127.0.0.1:{server.server_port}/v1",
                                            model="m", api_key_env="STANDIN_KEY", max_concurrency=1)
        run = services.run_launch(endpoint=endpoint, split="test", enqueue=False, method="naive", samples=2)
        services.run_execute_in_process(run=run)
        asked = len(served)
        services.run_execute_in_process(run=run)  # again: nothing is missing, so nothing is asked
    finally:
        server.shutdown()
    assert set(served) == set(kinds) and len(served) == asked
    run.refresh_from_db()
    stored = list(Result.objects.filter(run=run).values("raw_output", "finish_reason", "error", "messages",
                                                        "tokens_in", "tokens_out", "spent_tokens_in"))
    assert len(stored) == len(run.item_ids) * 2 and run.status in ("finished", "failed")
    for row in stored:
        texts = [row["raw_output"], row["finish_reason"], row["error"], json.dumps(row["messages"])]
        assert not any("\x00" in t or "\\u0000" in t for t in texts), row
        assert all(0 <= row[f] <= 2**31 - 1 for f in ("tokens_in", "tokens_out", "spent_tokens_in")), row
    outputs = {row["raw_output"] for row in stored}
    assert "### Answer:\n1\ufffd because" in outputs  # kept, the refused character shown as U+FFFD
    assert any("bad \ufffd request \ufffd" in row["error"] for row in stored)


@pytest.mark.parametrize("writer", ["postgresql", "executemany"])
def test_a_summed_spend_stops_at_its_column_s_largest_value(sample_items, writer):
    """A row asked again adds its spend to the row's own; a sum beyond the column's type stops at its largest value
    instead of failing the whole batch (the sums are written without an intermediate overflow)."""
    endpoint = services.endpoint_for_cli(builtin="lexical")
    run = services.run_launch(endpoint=endpoint, method="naive", ids=[sample_items[0].pk], enqueue=False)
    write = {"postgresql": rows._upsert_rows_postgresql, "executemany": rows._upsert_rows_executemany}[writer]
    values = rows.result_values(run, _results(run)[0])
    near = {"spent_tokens_in": 2**31 - 5, "spent_tokens_out": 2**31 - 1, "timeouts": 32760}
    with transaction.atomic():
        write([{**values, **near}])
    with transaction.atomic():
        write([{**values, "spent_tokens_in": 3, "spent_tokens_out": 7, "timeouts": 9}])
    row = Result.objects.get(run=run)
    assert (row.spent_tokens_in, row.spent_tokens_out, row.timeouts) == (2**31 - 2, 2**31 - 1, 32767)
