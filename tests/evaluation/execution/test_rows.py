"""The writers of a chunk's result rows (evaluation.execution.rows): PostgreSQL's COPY and the statement built once
for the embedded mode write exactly the rows Django's own upsert (bulk_create with update_conflicts) writes, for
every field of Result, first as inserts and then as updates of the same (run, item, sample)."""
import asyncio
import dataclasses

import pytest
from django.db import transaction

from evaluation.execution import chunks as execution
from evaluation.execution import rows
from evaluation.model_calls.engine import Engine
from evaluation.models import Result
from evaluation.prompting.methods import get_method
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db

_COMPARED = [f.attname for f in Result._meta.concrete_fields if f.attname not in ("id", "run_id", "created_at",
                                                                                   "updated_at")]


def _results(run):
    jobs = execution.JobPlanner.for_run(run).jobs([(i, s) for i in run.item_ids for s in range(run.rows_per_item)])
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
