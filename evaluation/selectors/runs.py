"""Reads of the evaluation app: progress, metrics, breakdowns, a run's rows and one row in full.

The leaderboard (paper Table 4) is `evaluation.selectors.leaderboard`, the two-run comparison
`evaluation.selectors.comparison`; metrics of many runs at once come from the database
(`evaluation.selectors.aggregates`), a single run's from its rows (`metrics.summarize`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import BooleanField, Count, ExpressionWrapper, F, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext

from annotation import clue_graph
from annotation.highlight import segments
from annotation.models import ItemStatus
from annotation.selectors import content_changes_since, item_list
from evaluation.models import JudgeRun, ModelEndpoint, Result, Run, RunStatus, SupersededResult
from evaluation.models.item_versions import current_content, items_at_versions
from evaluation.prompting.answer_reading import OK, option_labels
from evaluation.selectors.aggregates import JSONLength, metrics_many
from evaluation.selectors.leaderboard import without_rejected
from evaluation.selectors.outcomes import circular_verdicts
from evaluation.selectors.run_summaries import FREE_TEXT_METHODS, RunSummary, accuracy_gap, circular_of, priced
from evaluation.statistics.metrics import RowScore, RunMetrics, by_question_type, summarize
from foundation.errors import Invalid

#: The filters of a run's rows (run page and drill-down links).
RESULT_FILTERS = {
    "correct": Q(is_correct=True),
    "wrong": Q(is_correct=False),
    "parse_failure": Q(error="") & ~Q(parse_status=OK),
    "error": ~Q(error=""),
    "stale": ~Q(item_version=F("item__content_version")),
}


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    errors: int  # rows whose request failed for good
    tokens_in: int = 0
    tokens_out: int = 0
    active: bool = False
    elapsed_s: float | None = None  # since the latest launch or resume
    recent: int = 0  # rows written since then
    failed_requests: int = 0  # the requests the failed rows made, every retry counted

    @property
    def resolved(self) -> int:
        return self.done + self.errors

    @property
    def percent(self) -> float:
        return 100.0 * self.resolved / self.total if self.total else 100.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace of the rows written since the latest start (None before the first row)."""
        left = self.total - self.resolved
        if not self.active or left <= 0 or not self.recent or not self.elapsed_s:
            return None
        return self.elapsed_s / self.recent * left

    def as_json(self) -> dict:
        return {"total": self.total, "done": self.done, "errors": self.errors, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "eta_s": self.eta_s}


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
    """Newest runs, each with ``.progress`` and ``.summary`` (metrics from the database): three queries, and one
    more for the pace of the active ones."""
    runs = list(run_queryset().annotate(item_count=JSONLength("item_ids"))[:limit])
    metrics = metrics_many(runs=runs)
    now = timezone.now()
    active = [r.pk for r in runs if r.is_active]
    recent = _recent_rows(active) if active else {}
    free_text = [r.pk for r in runs if r.method in FREE_TEXT_METHODS]
    judged = set(JudgeRun.objects.filter(target_run_id__in=free_text).values_list("target_run_id", flat=True)
                 ) if free_text else set()
    circular = circular_verdicts(runs)  # no query without a circular run
    fresh = _current_metrics(runs, stale={r.pk for r in runs if metrics[r.pk][1].stale})
    for run in runs:
        m, counts = metrics[run.pk]
        run.progress = Progress(
            total=(run.item_count or 0) * run.rows_per_item, done=counts.n, errors=counts.errors,
            tokens_in=counts.tokens_in, tokens_out=counts.tokens_out, active=run.is_active,
            elapsed_s=(now - run.started_at).total_seconds() if run.started_at else None,
            recent=recent.get(run.pk, 0))
        why = accuracy_gap(run, m, resolved=run.progress.resolved, total=run.progress.total,
                           judged=run.pk in judged)
        run.summary = priced(run, m, stale=counts.stale, why=why, circular=circular_of(run, circular),
                              fresh=fresh.get(run.pk, (None,))[0])
    return runs


def _current_metrics(runs: list[Run], *, stale: set[int]) -> dict[int, tuple[RunMetrics, object]]:
    """The metrics on the items' current content, as the leaderboard's cells count them (fresh rows, no row of a
    rejected item), of the runs whose plain metrics differ: those with stale rows or rows of a rejected item. One
    query finds the latter; then one (cached for finished runs) for the stale ones without such rows, one per split
    for the others (restricted to the split's items that are not rejected, `leaderboard.without_rejected`)."""
    rejected = set(Result.objects.filter(run_id__in=[r.pk for r in runs], item__status=ItemStatus.REJECTED)
                   .order_by().values_list("run_id", flat=True).distinct()) if runs else set()
    plain = [r for r in runs if r.pk in stale and r.pk not in rejected]
    current = metrics_many(runs=plain, fresh_only=True) if plain else {}
    by_split: dict[str, list[Run]] = {}
    for run in runs:
        if run.pk in rejected:
            by_split.setdefault(run.split, []).append(run)
    for split, split_runs in by_split.items():
        kept, _ = without_rejected(split, None)
        current.update(metrics_many(runs=split_runs, fresh_only=True, item_ids=kept))
    return current


def _recent_rows(run_ids: list[int]) -> dict[int, int]:
    """Rows written since each run's latest launch or resume."""
    return dict(Result.objects.filter(run_id__in=run_ids, updated_at__gte=F("run__started_at")).order_by()
                .values("run_id").annotate(n=Count("run_id")).values_list("run_id", "n"))


def result_list(*, run: Run) -> QuerySet[Result]:
    """Every row of a run, in (item, sample) order, as the API returns them (item as an id), each with
    ``current_version`` (its item's content version now) and ``stale`` (asked at another one), in the same query."""
    return (Result.objects.filter(run=run).annotate(current_version=F("item__content_version"),
                                                    stale=ExpressionWrapper(~Q(item_version=F("item__content_version")),
                                                                            output_field=BooleanField()))
            .order_by("item_id", "sample_index"))


def superseded_list(*, run: Run) -> QuerySet[SupersededResult]:
    """The rows refreshes took out of a run (``services.run_refresh``), each (item, sample)'s oldest first, with
    ``external_id``, ``current_version`` (its item's content version now) and ``superseded_by_name`` (who refreshed:
    None from the command line), in the same query."""
    return (SupersededResult.objects.filter(run=run)
            .annotate(external_id=F("item__external_id"), current_version=F("item__content_version"),
                      superseded_by_name=F("superseded_by__username"))
            .order_by("item_id", "sample_index", "superseded_at", "pk"))


def run_progress_many(*, run_ids: list[int], now: datetime | None = None) -> dict[int, Progress]:
    """Progress of several runs in two queries (done, errors, tokens, and the pace since the latest start)."""
    now = now or timezone.now()
    runs = (Run.objects.filter(pk__in=run_ids).annotate(item_count=JSONLength("item_ids"))
            .values_list("pk", "item_count", "samples", "rotations", "status", "started_at"))
    counts = (
        Result.objects.filter(run_id__in=run_ids).order_by().values("run_id")
        .annotate(done=Count("run_id", filter=Q(error="")), errors=Count("run_id", filter=~Q(error="")),
                  failed_requests=Sum("attempts", filter=~Q(error="")),
                  tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"),
                  recent=Count("run_id", filter=Q(updated_at__gte=F("run__started_at"))))
    )
    found = {c.pop("run_id"): c for c in counts}
    out = {}
    for pk, item_count, samples, rotations, status, started_at in runs:
        c = found.get(pk, {})
        active = status in (RunStatus.QUEUED, RunStatus.RUNNING)
        out[pk] = Progress(total=(item_count or 0) * samples * rotations, done=c.get("done", 0),
                           errors=c.get("errors", 0), tokens_in=c.get("tokens_in") or 0,
                           tokens_out=c.get("tokens_out") or 0, active=active,
                           elapsed_s=(now - started_at).total_seconds() if started_at else None,
                           recent=c.get("recent", 0),
                           failed_requests=max(c.get("failed_requests") or 0, c.get("errors", 0)))
    return out


def run_progress(*, run: Run) -> Progress:
    return run_progress_many(run_ids=[run.pk])[run.pk]


def _row_scores(run_ids: list[int]) -> dict[int, list[RowScore]]:
    rows: dict[int, list[RowScore]] = {pk: [] for pk in run_ids}
    for r in Result.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "item_id", "is_correct", "parse_status", "keyinfo", "answer_first", "error", "tokens_in",
        "tokens_out", "item__question_type", "item_version", "item__content_version", "item__status",
    ).iterator(chunk_size=5000):
        rows[r[0]].append(RowScore(item_id=r[1], correct=r[2], parse_status=r[3], keyinfo=r[4], answer_first=r[5],
                                   error=bool(r[6]), tokens_in=r[7], tokens_out=r[8], question_type=r[9],
                                   stale=r[10] != r[11], rejected=r[12] == ItemStatus.REJECTED))
    return rows


def _summary(run: Run, rows: list[RowScore]) -> RunSummary:
    stale = sum(1 for r in rows if r.stale)
    current = [r for r in rows if not r.stale and not r.rejected]
    return priced(run, summarize(rows), stale=stale, circular=circular_of(run, circular_verdicts([run])),
                  fresh=summarize(current) if len(current) < len(rows) else None)


def run_summary(*, run: Run) -> RunSummary:
    """A run's metrics from its rows (what `evaluate` prints)."""
    return _summary(run, _row_scores([run.pk])[run.pk])


def run_summary_and_question_types(*, run: Run) -> tuple[RunSummary, dict[str, RunMetrics]]:
    """The run's summary and its metrics per question type, from one read of its rows."""
    rows = _row_scores([run.pk])[run.pk]
    return _summary(run, rows), by_question_type(rows)


def run_question_types(*, run: Run) -> list[str]:
    """The question types of a run's items (the run page's filter)."""
    return sorted(set(Result.objects.filter(run=run).values_list("item__question_type", flat=True).distinct()))


def run_results(*, run: Run, status: str = "", question_type: str = "") -> QuerySet[Result]:
    """A run's rows, optionally one outcome (RESULT_FILTERS) and one question type, with their items' heads."""
    results = (Result.objects.filter(run=run).select_related("item")
               .only(*RESULT_ROW_FIELDS, "item__external_id", "item__question_type", "item__answer_index",
                     "item__content_version"))
    if status in RESULT_FILTERS:
        results = results.filter(RESULT_FILTERS[status])
    if question_type:
        results = results.filter(item__question_type=question_type)
    return results.order_by("item_id", "sample_index")


RESULT_ROW_FIELDS = ("run_id", "item_id", "sample_index", "item_version", "answer_index", "parse_status",
                     "is_correct", "keyinfo", "raw_output", "free_answer", "error")


def result_detail(*, run: Run, pk: int) -> dict:
    """One row in full: the messages sent, the raw output, the parsed answer, the options as shown, and the
    context twice, with the model's key information and with the gold clues highlighted (fuzzy anchors).

    Options, gold, context and clues are the item's at the row's ``item_version`` (what the model was asked and
    was scored against), not its current content; ``stale`` and ``content_changes`` say what changed since, and
    ``asked_unknown`` that no revision records that version (the current content is shown then, said so)."""
    result = get_object_or_404(Result.objects.select_related("item"), run=run, pk=pk)
    item = result.item
    asked = items_at_versions([(item.pk, result.item_version)], current={item.pk: item}).get(
        (item.pk, result.item_version))
    shown_item = asked or current_content(item)
    graph = clue_graph.parse_clue_graph(shown_item.evidence, shown_item.reasoning)
    gold = clue_graph.anchor_clues(graph.clues, shown_item.context)
    model_lines = [line.strip(" -*•\t") for line in result.key_information.splitlines() if line.strip(" -*•\t")]
    model = clue_graph.anchor_clues(model_lines, shown_item.context)
    options = shown_item.options
    labels = option_labels(len(result.shown_order) or len(options), run.option_labels)
    return {
        "result": result, "item": item, "asked": shown_item, "asked_unknown": asked is None,
        "stale": result.item_version != item.content_version,
        "content_changes": content_changes_since(item=item, content_version=result.item_version),
        "shown": [{"label": labels[pos], "text": options[index] if index < len(options) else "",
                   "index": index, "correct": index == shown_item.answer_index, "chosen": index == result.answer_index}
                  for pos, index in enumerate(result.shown_order or range(len(options)))],
        "model_lines": [{"text": t, "anchor": a, "number": i + 1} for i, (t, a) in enumerate(zip(model_lines, model))],
        "model_segments": segments(shown_item.context, [(a.start, a.end, a.clue_index, a.exact) for a in model if a]),
        "gold_clues": [{"clue": c, "anchor": a, "number": i + 1} for i, (c, a) in enumerate(zip(graph.clues, gold))],
        "gold_segments": segments(shown_item.context, [(a.start, a.end, a.clue_index, a.exact) for a in gold if a]),
    }


def with_gold_as_asked(results: Sequence[Result]) -> Sequence[Result]:
    """The rows (``run_results``' page), each with ``gold``: the correct option at the row's ``item_version``, the
    one it was scored against (None when no revision records that version); one query for the stale rows."""
    stale = {(r.item_id, r.item_version) for r in results if r.item_version != r.item.content_version}
    asked = items_at_versions(stale) if stale else {}
    for r in results:
        if r.item_version == r.item.content_version:
            r.gold = r.item.answer_index
        else:
            found = asked.get((r.item_id, r.item_version))
            r.gold = found.answer_index if found is not None else None
    return results


def select_items(*, split: str = "", item_status: str = "", question_type: str = "",
                 ids: Sequence[int] = (), limit: int | None = None) -> tuple[list[int], list[int]]:
    """The ids of the items a launch over this selection takes, in id order (refuses a limit below 1), and the
    rejected (deleted) items it leaves out: a selection without a status takes every item but the rejected
    ones; asking for status ``rejected`` takes those. With a limit, only the rejected items before the last one
    taken are said to be left out (the others would not have been taken anyway)."""
    if limit is not None and limit < 1:
        raise Invalid(gettext("The limit must be at least 1."), field="limit")
    items = item_list(split=split or None, status=item_status or None, question_type=question_type or None)
    if ids:
        items = items.filter(pk__in=list(ids))
    rows = list(items.order_by("pk").values_list("pk", "status"))
    rejected = [] if item_status else [pk for pk, status in rows if status == ItemStatus.REJECTED]
    left_out = set(rejected)
    selected = [pk for pk, _ in rows if pk not in left_out]
    if limit:
        selected = selected[:limit]
        rejected = [pk for pk in rejected if selected and pk < selected[-1]]
    return selected, rejected


def select_item_ids(*, split: str = "", item_status: str = "", question_type: str = "",
                    ids: Sequence[int] = (), limit: int | None = None) -> list[int]:
    """The ids of the items a launch over this selection takes (``select_items``: never a rejected item unless
    the selection asks for status rejected)."""
    return select_items(split=split, item_status=item_status, question_type=question_type, ids=ids, limit=limit)[0]
