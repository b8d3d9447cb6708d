"""Run metrics computed in the database: one grouped query for any number of runs.

`metrics_many` gives the same :class:`~evaluation.metrics.RunMetrics` as
``metrics.summarize`` over the same rows (tests hold them equal), without loading the rows:
the run list and the leaderboard read 200,000 rows this way in one query. Rows of an item
changed since the run (``item_version`` no longer the item's version) are *stale*: they are
counted, and with ``fresh_only`` left out of the metrics.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from django.db.models import Avg, Count, F, FloatField, Func, IntegerField, Q, QuerySet, Sum, Value
from django.db.models.functions import Cast

from .metrics import RunMetrics, accuracy_interval
from .models import Result, Run
from .paired import wilson

#: A row whose item has not changed since it was asked.
FRESH = Q(item_version=F("item__version"))


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


def _aggregates(fresh_only: bool) -> dict:
    def where(q: Q | None = None) -> Q | None:
        if fresh_only:
            return FRESH if q is None else FRESH & q
        return q

    scored = Q(error="")
    choice = scored & Q(is_correct__isnull=False)
    parsed = choice & Q(parse_status="ok")
    one_over_options = Value(1.0, output_field=FloatField()) / Cast(JSONLength("item__options"), FloatField())
    return {
        "rows": Count("pk", filter=where()),
        "errors": Count("pk", filter=where(~scored)),
        "n": Count("pk", filter=where(scored)),
        "choice": Count("pk", filter=where(choice)),
        "correct": Count("pk", filter=where(choice & Q(is_correct=True))),
        "parsed": Count("pk", filter=where(parsed)),
        "parsed_correct": Count("pk", filter=where(parsed & Q(is_correct=True))),
        "first": Count("pk", filter=where(choice & Q(answer_first=True))),
        "parse_failures": Count("pk", filter=where(scored & ~Q(parse_status="ok"))),
        "keyinfo": Avg("keyinfo", filter=where(scored)),
        "tokens_in": Sum("tokens_in", filter=where()),
        "tokens_out": Sum("tokens_out", filter=where()),
        "stale": Count("pk", filter=~FRESH),
        "chance": Sum(one_over_options, filter=where(choice)),
    }


def row_counts(results: QuerySet[Result], *, fresh_only: bool = False) -> dict[int, RowCounts]:
    """Counts per run of these rows (one query)."""
    found = results.order_by().values("run_id").annotate(**_aggregates(fresh_only))
    return {row.pop("run_id"): RowCounts(**{k: (v if v is not None or k == "keyinfo" else 0) for k, v in row.items()})
            for row in found}


def _item_groups(results: QuerySet[Result], run_ids: list[int], fresh_only: bool) -> dict[int, list[list[float]]]:
    """Per run, each item's choice-row outcomes (for the interval of runs with several rows per item)."""
    rows = results.filter(run_id__in=run_ids, error="", is_correct__isnull=False)
    if fresh_only:
        rows = rows.filter(FRESH)
    groups: dict[int, list[list[float]]] = {pk: [] for pk in run_ids}
    found = (rows.order_by().values("run_id", "item_id")
             .annotate(rows=Count("pk"), correct=Count("pk", filter=Q(is_correct=True))).order_by("run_id", "item_id"))
    for g in found:
        groups[g["run_id"]].append([1.0] * g["correct"] + [0.0] * (g["rows"] - g["correct"]))
    return groups


def metrics_many(*, runs: Iterable[Run], fresh_only: bool = False,
                 item_ids: list[int] | None = None) -> dict[int, tuple[RunMetrics, RowCounts]]:
    """Each run's metrics (and the counts behind them) from its rows, optionally only fresh rows and these items.

    One query, plus one for the runs with several rows per item (samples or rotations), whose
    interval is the item bootstrap of ``metrics.summarize``; the others get Wilson's."""
    runs = list(runs)
    results = Result.objects.filter(run_id__in=[r.pk for r in runs])
    if item_ids is not None:
        results = results.filter(item_id__in=item_ids)
    counts = row_counts(results, fresh_only=fresh_only)
    several = [r.pk for r in runs if r.samples * getattr(r, "rotations", 1) > 1 and r.pk in counts]
    groups = _item_groups(results, several, fresh_only) if several else {}
    out = {}
    for run in runs:
        c = counts.get(run.pk, RowCounts())
        if run.pk in groups:
            interval = accuracy_interval(groups[run.pk]) if groups[run.pk] else (None, None)
        else:
            interval = wilson(c.correct, c.choice)  # one row per item: what accuracy_interval gives
        out[run.pk] = (c.metrics(interval), c)
    return out
