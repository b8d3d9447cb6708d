"""The writers of a chunk's result rows (evaluation.execution.rows): PostgreSQL's COPY and the statement built once
for the embedded mode write exactly the rows Django's own upsert (bulk_create with update_conflicts) writes, for
every field of Result, first as inserts and then as updates of the same (run, item, sample)."""
import asyncio
import dataclasses

import pytest
from django.db import transaction
from django.test.utils import CaptureQueriesContext

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


def _written(run):
    return {(r["item_id"], r["sample_index"]): r for r in Result.objects.filter(run=run).values(*_COMPARED)}


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
                if writers[run.pk] is rows._upsert_rows_postgresql:  # it takes the values as write_results gives them
                    writers[run.pk]([rows.result_values(run, r) for r in batch])
                else:
                    writers[run.pk]([rows.result_row(run, r) for r in batch])
        written = [_written(run) for run in runs]
        assert len(written[0]) == 24
        assert written[1] == written[0] and written[2] == written[0]
        now = {run.pk: dict(Result.objects.filter(run=run).values_list("pk", "created_at")) for run in runs}
        assert created in ({}, now)  # an update keeps when the row was first written
        created = now
    assert {r["attempts"] for r in written[0].values()} >= {8}  # the second writes updated the rows


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
    assert _written(runs[1]) == _written(runs[0])
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
