"""Reads of the evaluation app: progress, metrics, breakdowns and the cross-run comparison."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from .methods import METHODS
from .metrics import RowScore, RunMetrics, by_question_type, cost, summarize
from .models import ModelEndpoint, Result, Run


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    errors: int

    @property
    def resolved(self) -> int:
        return self.done + self.errors

    @property
    def percent(self) -> float:
        return 100.0 * self.resolved / self.total if self.total else 100.0


def endpoint_list() -> QuerySet[ModelEndpoint]:
    """Endpoints by name, each with ``run_count``."""
    return ModelEndpoint.objects.annotate(run_count=Count("runs")).order_by("name")


def run_queryset() -> QuerySet[Run]:
    """Runs newest first with their endpoint (one query), without the long id lists."""
    return Run.objects.select_related("endpoint").defer("item_ids", "requested_ids").order_by("-created_at")


def with_progress(runs: list[Run]) -> list[Run]:
    """The runs, each with ``.progress`` set (two queries for all of them)."""
    progress = run_progress_many(run_ids=[r.pk for r in runs])
    for run in runs:
        run.progress = progress.get(run.pk, Progress(0, 0, 0))
    return runs


def run_list(*, limit: int | None = 200) -> list[Run]:
    return with_progress(list(run_queryset()[:limit]))


def result_list(*, run: Run) -> QuerySet[Result]:
    """Every row of a run, in (item, sample) order, as the API returns them (item as an id: no join)."""
    return Result.objects.filter(run=run).order_by("item_id", "sample_index")


def run_progress_many(*, run_ids: list[int]) -> dict[int, Progress]:
    """Progress of several runs in two queries."""
    totals = {
        pk: len(ids) * samples * rotations
        for pk, ids, samples, rotations in Run.objects.filter(pk__in=run_ids).values_list("pk", "item_ids", "samples",
                                                                                           "rotations")
    }
    counts = (
        Result.objects.filter(run_id__in=run_ids).values("run_id")
        .annotate(done=Count("pk", filter=Q(error="")), errors=Count("pk", filter=~Q(error="")))
    )
    found = {c["run_id"]: c for c in counts}
    return {
        pk: Progress(total=total, done=found.get(pk, {}).get("done", 0), errors=found.get(pk, {}).get("errors", 0))
        for pk, total in totals.items()
    }


def run_progress(*, run: Run) -> Progress:
    return run_progress_many(run_ids=[run.pk])[run.pk]


def _row_scores(run_ids: list[int]) -> dict[int, list[RowScore]]:
    rows: dict[int, list[RowScore]] = {pk: [] for pk in run_ids}
    for r in Result.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "item_id", "is_correct", "parse_status", "keyinfo", "answer_first", "error", "tokens_in",
        "tokens_out", "item__question_type",
    ).iterator(chunk_size=5000):
        rows[r[0]].append(RowScore(item_id=r[1], correct=r[2], parse_status=r[3], keyinfo=r[4], answer_first=r[5],
                                   error=bool(r[6]), tokens_in=r[7], tokens_out=r[8], question_type=r[9]))
    return rows


@dataclass(frozen=True)
class RunSummary:
    run: Run
    metrics: RunMetrics
    cost: float | None
    wall_s: float | None

    @staticmethod
    def _percent(value: float | None) -> float | None:
        return None if value is None else 100.0 * value

    @property
    def accuracy_pct(self) -> float | None:
        return self._percent(self.metrics.accuracy)

    @property
    def keyinfo_pct(self) -> float | None:
        return self._percent(self.metrics.keyinfo)

    @property
    def first_option_pct(self) -> float | None:
        return self._percent(self.metrics.first_option_baseline)

    def as_json(self) -> dict:
        m = self.metrics
        return {
            "run": self.run.pk, "method": self.run.method, "model": self.run.endpoint.model,
            "status": self.run.status, "n": m.n, "accuracy": m.accuracy,
            "accuracy_ci95": [m.ci_low, m.ci_high] if m.ci_low is not None else None,
            "accuracy_parsed": m.accuracy_parsed, "first_option_baseline": m.first_option_baseline,
            "keyinfo": m.keyinfo, "parse_failures": m.parse_failures, "parse_failure_rate": m.parse_failure_rate,
            "errors": m.errors, "tokens_in": m.tokens_in, "tokens_out": m.tokens_out, "cost": self.cost,
            "wall_s": self.wall_s, "option_order": self.run.option_order, "seed": self.run.seed,
            "prompt_version": self.run.prompt_version,
        }


def _summary(run: Run, rows: list[RowScore]) -> RunSummary:
    metrics = summarize(rows)
    endpoint = run.endpoint
    price = cost(tokens_in=metrics.tokens_in, tokens_out=metrics.tokens_out,
                 price_in_per_mtok=endpoint.price_in_per_mtok, price_out_per_mtok=endpoint.price_out_per_mtok)
    return RunSummary(run=run, metrics=metrics, cost=price, wall_s=run.wall_s)


def run_summary(*, run: Run) -> RunSummary:
    return _summary(run, _row_scores([run.pk])[run.pk])


def run_summaries(*, runs: list[Run]) -> list[RunSummary]:
    rows = _row_scores([r.pk for r in runs])
    return [_summary(run, rows[run.pk]) for run in runs]


def run_summary_and_question_types(*, run: Run) -> tuple[RunSummary, dict[str, RunMetrics]]:
    """The run's summary and its metrics per question type, from one read of its rows."""
    rows = _row_scores([run.pk])[run.pk]
    return _summary(run, rows), by_question_type(rows)


def run_results(*, run: Run, status: str = "") -> QuerySet[Result]:
    results = Result.objects.filter(run=run).select_related("item").defer("messages", "item__context")
    if status == "correct":
        results = results.filter(is_correct=True)
    elif status == "wrong":
        results = results.filter(is_correct=False)
    elif status == "parse_failure":
        results = results.exclude(parse_status="ok").filter(error="")
    elif status == "error":
        results = results.exclude(error="")
    return results.order_by("item_id", "sample_index")


def comparison_table(*, split: str = "", option_order: str = "") -> dict:
    """Paper Table 4 layout: methods as rows (in the registry's order), endpoints as column pairs.

    Each cell shows the latest finished run of that (method, endpoint), optionally only
    runs on one split and with one option order: KeyInfo and Acc.
    """
    runs = Run.objects.select_related("endpoint").filter(status="finished").defer("item_ids", "requested_ids")
    if split:
        runs = runs.filter(split=split)
    if option_order:
        runs = runs.filter(option_order=option_order)
    runs = list(runs.order_by("created_at"))
    latest: dict[tuple[str, int], Run] = {}
    for run in runs:
        latest[(run.method, run.endpoint_id)] = run
    summaries = {(s.run.method, s.run.endpoint_id): s for s in run_summaries(runs=list(latest.values()))}
    endpoints = sorted({run.endpoint for run in latest.values()}, key=lambda e: e.name)
    rows = []
    for name, method in METHODS.items():
        cells = [summaries.get((name, e.pk)) for e in endpoints]
        if any(cells):
            rows.append({"method": method, "family": method.family, "cells": cells})
    return {"endpoints": endpoints, "rows": rows}
