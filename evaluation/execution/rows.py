"""The database rows of a chunk's results: one Result per (run, item, sample), upserted, and the response cache.

A row records what happened, not only the answer: every call in ``messages`` (its finish reason,
tokens, cache use and failed attempts, and the call that failed), the finish reason of the output
read, whether a call was cut at the token cap, the tokens actually spent (calls not answered from
the cache), the attempts that timed out (abandoned: the server may have kept generating them) and
the error's class. A batch of rows and its cache entries are written in one transaction: a failure
leaves nothing half-written.
"""
from __future__ import annotations

import functools
from collections.abc import Container, Iterable
from typing import Any

from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from evaluation.model_calls.clients import MAX_TOKENS
from evaluation.model_calls.engine import JobResult, timeouts_of
from evaluation.models import CachedResponse, Result, Run
from evaluation.prompting.methods import TRUNCATED, Completion
from evaluation.prompting.scoring import answer_shown_first, score_outcome
from foundation import fast_json
from foundation.storable import storable_text

RESULT_FIELDS = [
    "item_version", "messages", "raw_output", "shown_order", "answer_index", "answer_label", "parse_status", "is_correct",
    "answer_first", "free_answer", "key_information", "keyinfo", "tokens_in", "tokens_out", "latency_s",
    "attempts", "cached", "error", "finish_reason", "truncated", "spent_tokens_in", "spent_tokens_out", "timeouts",
    "error_class", "failed_call", "updated_at",
]


def _tokens(counts: Iterable[int]) -> int:
    """A sum of token counts as a row keeps it (at most PostgreSQL's integer: many huge counts cannot overflow)."""
    return min(sum(counts), MAX_TOKENS)


def result_values(run: Run, result: JobResult) -> dict[str, Any]:
    """The database row of one job's result, as {field attname: value} for the fields it sets (the others take
    their defaults); the judgement itself is `scoring.score_outcome`. A dict, not a model instance: building a
    Result was a fifth of the database thread's CPU in a large run, and the COPY reads the values only."""
    job, outcome = result.job, result.outcome
    shown = job.shown
    calls = result.calls if result.calls is not None else (outcome.exchanges if outcome is not None else [])
    done = [c for c in calls if "error" not in c]
    fresh = [c for c in done if not c.get("cached")]
    row = {"run_id": run.pk, "item_id": job.item_id, "sample_index": job.sample_index,
           "item_version": job.item_version, "shown_order": list(shown.order),
           "answer_first": answer_shown_first(shown), "attempts": result.attempts, "updated_at": timezone.now(),
           "messages": calls,
           "tokens_in": _tokens(c.get("tokens_in", 0) for c in done),
           "tokens_out": _tokens(c.get("tokens_out", 0) for c in done),
           "spent_tokens_in": _tokens(c.get("tokens_in", 0) for c in fresh),
           "spent_tokens_out": _tokens(c.get("tokens_out", 0) for c in fresh),
           "latency_s": sum(c.get("latency_s", 0.0) for c in done),
           "truncated": any(c.get("finish_reason") == TRUNCATED for c in done),
           "timeouts": min(timeouts_of(calls), 32767)}
    if outcome is None:
        row["error"] = storable_text(result.error or "failed")
        row["error_class"], row["failed_call"] = result.error_class or "other", result.failed_call
        return row
    score = score_outcome(shown, outcome)
    row["raw_output"] = outcome.output
    # The finish reason of the call whose output was read (self-consistency: the winning sample's).
    read = next((c for c in reversed(done) if c.get("output") == outcome.output), done[-1] if done else {})
    row["finish_reason"] = str(read.get("finish_reason") or "")[:30]
    row["key_information"] = outcome.key_information
    row["free_answer"] = outcome.free_answer
    if result.calls is None:  # an engine without a call trace (older callers): the outcome's own sums
        tokens_in, tokens_out = _tokens([outcome.tokens_in]), _tokens([outcome.tokens_out])
        row["tokens_in"], row["tokens_out"], row["latency_s"] = tokens_in, tokens_out, outcome.latency_s
        row["spent_tokens_in"], row["spent_tokens_out"] = (0, 0) if outcome.cached else (tokens_in, tokens_out)
    row["cached"] = outcome.cached
    row["parse_status"], row["keyinfo"] = score.parse_status, score.keyinfo
    row["answer_index"], row["answer_label"], row["is_correct"] = score.answer_index, score.answer_label, score.is_correct
    return row


def result_row(run: Run, result: JobResult) -> Result:
    """`result_values` as a Result instance (unsaved)."""
    return Result(**result_values(run, result))


_COPY_FIELDS = [f for f in Result._meta.concrete_fields if not f.primary_key]
_JSON_COLUMNS = {f.attname for f in _COPY_FIELDS if f.get_internal_type() == "JSONField"}
_INCOMING = "evaluation_result_incoming"
_UNIQUE_VIOLATION = "23505"


@functools.cache
def _defaults() -> tuple[dict[str, Any], dict[str, Any]]:
    """The defaults of the fields a row leaves out, as a Result instance takes them (Django's `get_default`): fixed
    ones once (an empty list or dict too: the COPY only reads it), any other callable (a time) for each row."""
    fixed, per_row = {}, {}
    for f in _COPY_FIELDS:
        if f.has_default() and callable(f.default) and f.default not in (list, dict):
            per_row[f.attname] = f
        else:
            fixed[f.attname] = f.get_default()
    return fixed, per_row


#: What a row asked again (a failed one, on a resume) adds to the row it replaces instead of overwriting it: the
#: tokens and the abandoned attempts of every time the (run, item, sample) was asked, which the run spent.
ACCUMULATED_FIELDS = ("spent_tokens_in", "spent_tokens_out", "timeouts")


#: The largest value each summed column holds (PositiveIntegerField, PositiveSmallIntegerField): a sum stops there.
_CAPS = {"spent_tokens_in": 2**31 - 1, "spent_tokens_out": 2**31 - 1, "timeouts": 32767}


def _summed(table: str, column: str, cap: int) -> str:
    """``column`` set to the row's own plus the incoming value, at most ``cap`` (written so that no intermediate sum
    leaves the column's type, on PostgreSQL and SQLite alike)."""
    return (f"{column} = CASE WHEN {table}.{column} > {cap} - EXCLUDED.{column} THEN {cap} "
            f"ELSE {table}.{column} + EXCLUDED.{column} END")


def _upsert_parts() -> tuple[str, str, str]:
    """(table, its columns, the ON CONFLICT clause) of the result upsert: (run, item, sample) updates RESULT_FIELDS,
    adding ACCUMULATED_FIELDS to the row's own."""
    quote = connection.ops.quote_name
    table = quote(Result._meta.db_table)
    updates = ", ".join(_summed(table, quote(column), _CAPS[name]) if name in ACCUMULATED_FIELDS
                        else f"{quote(column)} = EXCLUDED.{quote(column)}"
                        for name, column in ((name, Result._meta.get_field(name).column) for name in RESULT_FIELDS))
    return (table, ", ".join(quote(f.column) for f in _COPY_FIELDS),
            f"ON CONFLICT (run_id, item_id, sample_index) DO UPDATE SET {updates}")


def _copy_rows(cursor, table: str, column_list: str, rows: list[dict[str, Any]]) -> None:
    """The rows' values through COPY into ``table`` (values as psycopg takes them, JSON columns encoded); its errors
    as Django's (an IntegrityError for a unique violation)."""
    now = timezone.now()
    attnames = [f.attname for f in _COPY_FIELDS]
    with connection.wrap_database_errors, cursor.cursor.copy(f"COPY {table} ({column_list}) FROM STDIN") as copy:
        fixed, per_row = _defaults()
        for row in rows:
            values = []
            for name in attnames:
                value = row[name] if name in row else fixed[name] if name in fixed else per_row[name].get_default()
                if name in _JSON_COLUMNS:
                    value = fast_json.dumps_text(value)
                elif name == "created_at" and value is None:
                    value = now
                values.append(value)
            copy.write_row(values)


def _upsert_rows_postgresql(rows: list[dict[str, Any]]) -> None:
    """INSERT ... ON CONFLICT (run, item, sample) DO UPDATE from a COPY into a session temp table.

    The same upsert as ``bulk_create(update_conflicts=True)`` (so exactly-once is unchanged), at a
    fraction of its CPU: values go to psycopg as tuples through COPY instead of one SQL parameter per
    field, which matters because this thread competes with the event loop for the GIL."""
    table, column_list, on_conflict = _upsert_parts()
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_INCOMING} ON COMMIT DELETE ROWS AS "
                       f"SELECT {column_list} FROM {table} WITH NO DATA")
        _copy_rows(cursor, _INCOMING, column_list, rows)
        cursor.execute(f"INSERT INTO {table} ({column_list}) SELECT {column_list} FROM {_INCOMING} {on_conflict}")


def _insert_rows_postgresql(rows: list[dict[str, Any]]) -> None:
    """New rows (none of their (run, item, sample) written yet): one COPY straight into the table, in a savepoint.
    Should one be there after all (another execution of the chunk wrote it meanwhile), the unique constraint
    refuses the COPY, nothing of it stays, and the rows go through the upsert instead: exactly once either way.
    Without the session table and the second pass over the rows PostgreSQL spent about a tenth less time on a
    run's rows in psql, a third less with lz4 (migration 0012) as well (README, the sixth session)."""
    table, column_list, _ = _upsert_parts()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            _copy_rows(cursor, table, column_list, rows)
    except IntegrityError as error:
        if getattr(error.__cause__, "sqlstate", None) != _UNIQUE_VIOLATION:
            raise
        _upsert_rows_postgresql(rows)


#: The Python type that Django's own field classes return unchanged from ``get_db_prep_save`` (exact classes: a
#: subclass may prepare its values otherwise; a relation by its target's class).
_OWN_TYPES = {**dict.fromkeys((models.AutoField, models.BigAutoField, models.SmallAutoField, models.IntegerField,
                               models.BigIntegerField, models.SmallIntegerField, models.PositiveIntegerField,
                               models.PositiveSmallIntegerField, models.PositiveBigIntegerField), int),
              models.FloatField: float, models.CharField: str, models.TextField: str, models.BooleanField: bool}
_PROBES = {int: 7, float: 0.5, str: "x", bool: True}


def _plan(conn) -> list[tuple[str, Any, str, Any]]:
    """(attname, field, how, value) for each column: "stamp" (the write's time, set on insert: ``value``), "json"
    (encoded by fast_json), else "plain" (``value``: the type passed as it is, or None: every value through the
    field)."""
    stamps = Result()  # pre_save sets each auto_now(_add) field of it as an insert would, once for the batch
    plan = []
    for f in _COPY_FIELDS:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            plan.append((f.attname, f, "stamp", f.get_db_prep_save(f.pre_save(stamps, True), conn)))
            continue
        if type(f) is models.JSONField and f.encoder is None:
            plan.append((f.attname, f, "json", None))
            continue
        own = _OWN_TYPES.get(type(f.target_field if f.is_relation else f))
        if own is not None and type(f.get_db_prep_save(_PROBES[own], conn)) is not own:
            own = None  # this database's own adaptation (PostgreSQL wraps integers in psycopg's Int2, Int4...)
        plan.append((f.attname, f, "plain", own))
    return plan


def prepared_values(rows: list[dict[str, Any]], conn) -> list[tuple]:
    """The rows' values (``result_values``) in ``_COPY_FIELDS`` order as the ORM's insert prepares them for ``conn``
    (``pre_save``, then ``get_db_prep_save`` of a Result made from the row), without making a Result for each row or
    calling a field for each value: a value left out takes the field's default, a time set on insert (``auto_now``,
    ``auto_now_add``) is the write's, JSON is encoded by ``fast_json`` (compact, as the PostgreSQL COPY writes it),
    and a value already of the type its field returns unchanged (or None) is passed as it is; any other value goes
    through its field. The Results and the fields' calls were over half of the embedded mode's writing thread,
    which holds the interpreter lock the event loop needs."""
    fixed, per_row = _defaults()
    plan = _plan(conn)
    prepared = []
    for row in rows:
        values = []
        for name, f, how, own in plan:
            if how == "stamp":
                values.append(own)
                continue
            value = row[name] if name in row else fixed[name] if name in fixed else per_row[name].get_default()
            if how == "json":
                values.append(None if value is None else fast_json.dumps_text(value))  # None: SQL NULL, as the ORM
            elif value is None or type(value) is own:
                values.append(value)
            else:
                values.append(f.get_db_prep_save(value, conn))
        prepared.append(tuple(values))
    return prepared


def _upsert_rows_executemany(rows: list[dict[str, Any]]) -> None:
    """The same upsert as one INSERT ... ON CONFLICT DO UPDATE statement for the whole batch, run over the rows'
    values (SQLite, the embedded mode): ``bulk_create`` assembled the SQL of every row again, a quarter of an
    embedded 12k-request run's CPU. Values are prepared as the ORM's insert prepares them (``prepared_values``)."""
    table, column_list, on_conflict = _upsert_parts()
    sql = f"INSERT INTO {table} ({column_list}) VALUES ({', '.join(['%s'] * len(_COPY_FIELDS))}) {on_conflict}"
    with connection.cursor() as cursor:
        cursor.executemany(sql, prepared_values(rows, connection))


def write_results(run: Run, results: list[JobResult], model: str, *, existing: Container[tuple[int, int]] = ()) -> None:
    """Upsert the rows of these results and store their new responses in the cache, in one transaction.
    ``existing``: the (item, sample) pairs that had a row when the chunk began (failed rows asked again); a batch
    without any is COPYed straight in (an insert that falls back to the upsert), one with any is upserted."""
    rows = [result_values(run, r) for r in results]
    cached = [
        CachedResponse(key=key, model=model, text=c.text, tokens_in=c.tokens_in, tokens_out=c.tokens_out,
                       finish_reason=(c.finish_reason or "")[:30])
        for r in results if r.outcome is not None and r.new_cache
        for key, c in r.new_cache.items()
    ]
    with transaction.atomic():
        if connection.vendor != "postgresql":  # SQLite (embedded mode)
            _upsert_rows_executemany(rows)
        elif any((r.job.item_id, r.job.sample_index) in existing for r in results):
            _upsert_rows_postgresql(rows)
        else:
            _insert_rows_postgresql(rows)
        if cached:
            CachedResponse.objects.bulk_create(cached, ignore_conflicts=True)


def cache_fetch(keys: list[str]) -> dict[str, Completion]:
    return {
        c.key: Completion(text=c.text, tokens_in=c.tokens_in, tokens_out=c.tokens_out, cached=True,
                          finish_reason=c.finish_reason)
        for c in CachedResponse.objects.filter(key__in=keys)
    }
