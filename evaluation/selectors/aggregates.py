"""Run metrics computed in the database: one grouped query for any number of runs (cached for finished runs).

`metrics_many` gives the same :class:`~evaluation.statistics.metrics.RunMetrics` as
``metrics.summarize`` over the same rows (tests hold them equal), without loading the rows:
the run list and the leaderboard read 200,000 rows this way in one query. Rows of an item
changed since the run (``item_version`` no longer the item's version) are *stale*: they are
counted, and with ``fresh_only`` left out of the metrics.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, F, Func, IntegerField, Q

from annotation.models import Item
from evaluation.models import Result, Run
from evaluation.prompting.answer_reading import OK
from evaluation.selectors import counts_cache
from evaluation.statistics.metrics import RunMetrics, accuracy_interval
from evaluation.statistics.paired import wilson_many

#: A row whose item has not changed since it was asked.
FRESH = Q(item_version=F("item__content_version"))


class JSONLength(Func):
    """Length of a JSON array column (PostgreSQL jsonb, SQLite json)."""

    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="jsonb_array_length", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="json_array_length", **extra)


@dataclass(frozen=True)
class RowCounts:
    """Counts of one run's rows (the inputs of its metrics)."""

    rows: int = 0
    errors: int = 0
    n: int = 0  # scored rows (the request did not fail)
    choice: int = 0  # scored multiple-choice rows (is_correct set)
    correct: int = 0
    parsed: int = 0
    parsed_correct: int = 0
    first: int = 0  # choice rows whose correct option was shown first
    parse_failures: int = 0
    keyinfo: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    stale: int = 0  # rows of an item changed since (all of them, fresh_only or not)
    chance: float = 0.0  # sum over choice rows of 1 / number of options: what guessing expects
    #: With a reference: this run's first-sample outcomes (fresh, scored choice rows of sample 0) and their
    #: crossing with the reference's outcomes, {(reference right, this right): pairs}.
    outcomes: int = 0
    crossed: dict | None = None

    def metrics(self, interval: tuple[float | None, float | None]) -> RunMetrics:
        low, high = interval
        return RunMetrics(
            n=self.n, errors=self.errors, correct=self.correct,
            accuracy=self.correct / self.choice if self.choice else None, ci_low=low, ci_high=high,
            accuracy_parsed=self.parsed_correct / self.parsed if self.parsed else None,
            parse_failures=self.parse_failures, parse_failure_rate=self.parse_failures / self.n if self.n else None,
            keyinfo=self.keyinfo, first_option_baseline=self.first / self.choice if self.choice else None,
            tokens_in=self.tokens_in, tokens_out=self.tokens_out,
        )


def _json_length(vendor: str) -> str:
    return "jsonb_array_length" if vendor == "postgresql" else "json_array_length"


def id_list(ids: Sequence[int]) -> tuple[str, list[int]]:
    """``IN (...)`` placeholders and parameters for ids."""
    return ", ".join(["%s"] * len(ids)), list(ids)


#: The items whose rows may be stale: their content changed at some time (a revert may have taken them back to 1).
CHANGED_ITEMS = ("(SELECT id, content_version AS version FROM {item} "
                 "WHERE highest_content_version > 1 OR content_version > 1)")


def tables() -> tuple[str, str]:
    """The quoted result and item tables."""
    q = connection.ops.quote_name
    return q(Result._meta.db_table), q(Item._meta.db_table)


def outcome_sql(run: Run, *, only: str = "") -> str:
    """SELECT (item_id, item_version, ok) of a run's outcomes: fresh, complete first samples. Its parameters
    are :func:`outcome_params`; ``only`` is an optional ``AND r.item_id IN (...)``."""
    result, item = tables()
    fresh = f"LEFT JOIN {CHANGED_ITEMS.format(item=item)} x ON x.id = r.item_id"
    where = (f"r.run_id = %s AND r.sample_index < %s AND r.error = '' AND r.is_correct IS NOT NULL {only} "
             "AND (x.id IS NULL OR r.item_version = x.version)")
    if run.rotations == 1:
        return (f"SELECT r.item_id, r.item_version, CASE WHEN r.is_correct THEN 1 ELSE 0 END AS ok "
                f"FROM {result} r {fresh} WHERE {where}")
    return (f"SELECT r.item_id, r.item_version, MIN(CASE WHEN r.is_correct THEN 1 ELSE 0 END) AS ok "
            f"FROM {result} r {fresh} WHERE {where} GROUP BY r.item_id, r.item_version HAVING COUNT(*) = %s")


def outcome_params(run: Run, only_params: Sequence[int] = ()) -> list[int]:
    return [run.pk, run.rotations, *only_params] + ([run.rotations] if run.rotations > 1 else [])


def row_counts(*, run_ids: Sequence[int], item_ids: Sequence[int] | None = None, fresh_only: bool = False,
               reference: Run | None = None) -> dict[int, RowCounts]:
    """Counts per run of its rows (optionally only these items), in one query.

    The database groups the rows by run and by the few values the metrics need (fresh, scored,
    parse status, correct, shown first) and sums within each group: a handful of groups per run,
    added up here. Every column it reads from the result table is in the ``result_run_scores``
    covering index, so PostgreSQL answers from the index without reading the wide rows (messages,
    outputs). Items join only when they are *exceptional*: their content changed at some time (so a
    row may be stale, also after a revert to the first content) or with another number of options than
    most (the random-guess expectation); every other row is fresh and has the common number of options.

    With a ``reference`` run, the same pass crosses each first-sample row with the reference's outcome
    on the same (item, version) (``RowCounts.outcomes`` / ``crossed``; meaningful for runs with one
    row per sample, see evaluation.selectors.outcomes)."""
    if not run_ids or item_ids is not None and not item_ids:
        return {}
    result, item = tables()
    length = _json_length(connection.vendor)
    only, only_params = "", []
    if item_ids is not None:
        items_in, only_params = id_list(item_ids)
        only = f"AND r.item_id IN ({items_in})"
    runs_in, run_params = id_list(run_ids)
    common = f"(SELECT {length}(options) FROM {item} GROUP BY 1 ORDER BY COUNT(*) DESC, 1 LIMIT 1)"
    ref_cte, ref_join, ref_key, params = "", "", "NULL", []
    if reference is not None:
        ref_cte = f"WITH ref AS ({outcome_sql(reference, only=only)})"
        params = outcome_params(reference, only_params)
        ref_join = ("LEFT JOIN ref ON ref.item_id = r.item_id AND ref.item_version = r.item_version "
                    "AND r.sample_index = 0")
        ref_key = "ref.ok"
    sql = f"""{ref_cte}
        SELECT r.run_id, (x.id IS NULL OR r.item_version = x.version) AS fresh, r.error = '' AS scored,
               r.parse_status, r.is_correct, r.answer_first, r.sample_index = 0 AS first_sample, {ref_key},
               COUNT(*), SUM(r.keyinfo), COUNT(r.keyinfo), SUM(r.tokens_in), SUM(r.tokens_out),
               SUM(COALESCE(x.inverse, 1.0 / {common}))
        FROM {result} r LEFT JOIN (
            SELECT id, content_version AS version, 1.0 / {length}(options) AS inverse FROM {item}
            WHERE highest_content_version > 1 OR content_version > 1 OR {length}(options) <> {common}
        ) x ON x.id = r.item_id {ref_join}
        WHERE r.run_id IN ({runs_in}) {only}
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params + run_params + only_params)
        groups = cursor.fetchall()
    totals: dict[int, dict] = {}
    crossed: dict[int, dict] = {}
    for (run_id, fresh, scored, parse_status, is_correct, answer_first, first_sample, ref_ok, rows, k_sum, k_n,
         t_in, t_out, chance) in groups:
        t = totals.setdefault(run_id, dict.fromkeys(_SUMS, 0))
        if reference is not None and fresh and scored and is_correct is not None and first_sample:
            t["outcomes"] += rows
            if ref_ok is not None:
                cell = crossed.setdefault(run_id, {})
                key = (int(ref_ok), int(bool(is_correct)))
                cell[key] = cell.get(key, 0) + rows
        if not fresh:
            t["stale"] += rows
            if fresh_only:
                continue
        t["rows"] += rows
        t["tokens_in"] += int(t_in or 0)
        t["tokens_out"] += int(t_out or 0)
        if not scored:
            t["errors"] += rows
            continue
        t["n"] += rows
        t["keyinfo_sum"] += float(k_sum or 0.0)
        t["keyinfo_n"] += k_n
        parsed_ok = parse_status == OK
        if not parsed_ok:
            t["parse_failures"] += rows
        if is_correct is None:
            continue
        t["choice"] += rows
        t["chance"] += float(chance or 0.0)
        t["correct"] += rows if is_correct else 0
        t["first"] += rows if answer_first else 0
        if parsed_ok:
            t["parsed"] += rows
            t["parsed_correct"] += rows if is_correct else 0
    out = {}
    for pk, t in totals.items():
        keyinfo_sum, keyinfo_n = t.pop("keyinfo_sum"), t.pop("keyinfo_n")
        out[pk] = RowCounts(**t, keyinfo=keyinfo_sum / keyinfo_n if keyinfo_n else None,
                            crossed=crossed.get(pk, {}) if reference is not None else None)
    return out


_SUMS = ("rows", "errors", "n", "choice", "correct", "parsed", "parsed_correct", "first", "parse_failures",
         "tokens_in", "tokens_out", "stale", "chance", "outcomes", "keyinfo_sum", "keyinfo_n")


def _item_groups(run_ids: list[int], item_ids: Sequence[int] | None, fresh_only: bool) -> dict[int, list[list[float]]]:
    """Per run, each item's choice-row outcomes (for the interval of runs with several rows per item)."""
    rows = Result.objects.filter(run_id__in=run_ids, error="", is_correct__isnull=False)
    if item_ids is not None:
        rows = rows.filter(item_id__in=item_ids)
    if fresh_only:
        rows = rows.filter(FRESH)
    groups: dict[int, list[list[float]]] = {pk: [] for pk in run_ids}
    found = (rows.order_by().values("run_id", "item_id")
             .annotate(rows=Count("*"), correct=Count("run_id", filter=Q(is_correct=True))).order_by("run_id", "item_id"))
    for g in found:
        groups[g["run_id"]].append([1.0] * g["correct"] + [0.0] * (g["rows"] - g["correct"]))
    return groups


def metrics_many(*, runs: Iterable[Run], fresh_only: bool = False, item_ids: list[int] | None = None,
                 reference: Run | None = None) -> dict[int, tuple[RunMetrics, RowCounts]]:
    """Each run's metrics (and the counts behind them) from its rows, optionally only fresh rows and these items.

    Finished runs come from the cache when nothing they depend on changed (evaluation.selectors.counts_cache: one
    small query and one cache read); the others from one query over their rows, plus one for the runs with
    several rows per item (samples or rotations), whose interval is ``metrics.summarize``'s (Wilson's on the items'
    effective number of rows, `metrics.item_wilson`); the others get Wilson's."""
    runs = list(runs)
    cache_keys = counts_cache.keys(runs=runs, fresh_only=fresh_only, item_ids=item_ids, reference=reference)
    cached = counts_cache.get_many(cache_keys)
    todo = [r for r in runs if r.pk not in cached]
    counts = row_counts(run_ids=[r.pk for r in todo], item_ids=item_ids, fresh_only=fresh_only,
                        reference=reference) if todo else {}
    several = [r.pk for r in todo if r.rows_per_item > 1 and r.pk in counts]
    groups = _item_groups(several, item_ids, fresh_only) if several else {}
    found = [counts.get(run.pk, RowCounts(crossed={} if reference is not None else None)) for run in todo]
    # One row per item: Wilson's interval (what accuracy_interval gives), all in one call.
    intervals = wilson_many([c.correct for c in found], [c.choice for c in found])
    computed = {}
    for run, c, interval in zip(todo, found, intervals):
        if run.pk in groups:
            interval = accuracy_interval(groups[run.pk]) if groups[run.pk] else (None, None)
        computed[run.pk] = (c.metrics(interval), c)
    counts_cache.set_many(cache_keys, computed)
    return {run.pk: cached[run.pk] if run.pk in cached else computed[run.pk] for run in runs}
