"""The leaderboard (paper Table 4) from the database: methods as rows, models as columns, like for like.

A table is over one split (the latest finished run of each (method, endpoint) on it, one option
order) or over chosen runs (then always their common items) — never a silent mix. Every cell
counts only its *fresh* rows (the item has not changed since it was asked) and says how many
stale rows it dropped. Against a chosen reference cell each cell gets an exact McNemar test on
the (item, version) pairs both have (one outcome per item: its first sample, or with circular
order the first sample's rotations, all right), Holm-corrected across the table; the numbers of
pairs and of items only one side has are shown. Below the methods (evaluation.selectors.baselines):
the always-first-option and the random-guess baselines of each column's rows, with the column's
items as their n, and humans from the studies on each column's items and item versions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.utils.translation import gettext, pgettext, pgettext_lazy

from annotation.models import Item, ItemStatus
from evaluation.judge.specs import FREE_TEXT
from evaluation.models import ModelEndpoint, OptionOrder, Run, RunStatus
from evaluation.prompting.methods import METHODS
from evaluation.selectors.aggregates import JSONLength, RowCounts, metrics_many
from evaluation.selectors.baselines import BaselineRow, baseline_rows
from evaluation.selectors.judge import JudgedAccuracy, free_text_accuracy
from evaluation.selectors.outcomes import circular_verdicts, common_item_ids, paired_counts
from evaluation.selectors.quality import check_kinds, flagged_item_ids
from evaluation.statistics.metrics import RunMetrics
from evaluation.statistics.paired import ALPHA, Paired, holm, mcnemar_exact_many
from foundation.errors import Invalid


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


@dataclass
class Cell:
    run: Run
    metrics: RunMetrics
    counts: RowCounts
    paired: Paired | None = None  # against the reference cell
    p_value: float | None = None  # exact McNemar on the pairs (None: no pairs, or the reference itself)
    p_holm: float | None = None
    is_reference: bool = False
    circular: tuple[int, int] | None = None  # circular order: (items right in every rotation, items)
    #: A free-text cell: per judge configuration, its accuracy from the judge alone, from people alone and
    #: judge-powered (PPI++), each with its n, over the cell's items (fresh rows only).
    judged: list[JudgedAccuracy] = field(default_factory=list)

    @property
    def circular_accuracy(self) -> float | None:
        return self.circular[0] / self.circular[1] if self.circular and self.circular[1] else None

    @property
    def method(self) -> str:
        return self.run.method

    @property
    def endpoint(self) -> ModelEndpoint:
        return self.run.endpoint

    @property
    def key(self) -> str:
        return cell_key(self.run.method, self.run.endpoint.name)

    @property
    def accuracy_pct(self) -> float | None:
        return _pct(self.metrics.accuracy)

    @property
    def keyinfo_pct(self) -> float | None:
        return _pct(self.metrics.keyinfo)

    @property
    def first_option_pct(self) -> float | None:
        return _pct(self.metrics.first_option_baseline)

    @property
    def significant(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA

    @property
    def direction(self) -> str:
        """'better' / 'worse' than the reference on the discordant pairs ('' without a test)."""
        if self.paired is None or not self.paired.n:
            return ""
        ref_better, cell_better = self.paired.discordant
        return "better" if cell_better > ref_better else "worse" if cell_better < ref_better else "same"

    def as_json(self) -> dict:
        m, p = self.metrics, self.paired
        return {
            "method": self.run.method, "endpoint": self.run.endpoint.name, "model": self.run.endpoint.model,
            "run": self.run.pk, "split": self.run.split, "option_order": self.run.option_order, "n": m.n,
            "correct": m.correct, "accuracy": m.accuracy,
            "accuracy_ci95": [m.ci_low, m.ci_high] if m.ci_low is not None else None,
            "keyinfo": m.keyinfo, "first_option_baseline": m.first_option_baseline,
            "parse_failures": m.parse_failures, "errors": m.errors, "stale_dropped": self.counts.stale,
            "is_reference": self.is_reference,
            "pairs": p.n if p else None, "pairs_dropped": [p.ref_only, p.other_only] if p else None,
            "discordant": list(p.discordant) if p else None, "p_value": self.p_value,
            "p_holm": self.p_holm, "significant": self.significant if p else None,
            "circular_accuracy": self.circular_accuracy, "circular_n": self.circular[1] if self.circular else None,
            "judged": [_judged_json(a) for a in self.judged] if self.run.method == FREE_TEXT else None,
        }


def _judged_json(accuracy: JudgedAccuracy) -> dict:
    """A free-text cell's accuracy per judge: judge only, people only and judge-powered, each with its n."""
    return {"config": accuracy.config, "judge": {"value": accuracy.accuracy, "n": accuracy.counted},
            "people": accuracy.people, "powered": accuracy.powered, "n": accuracy.n, "reviewed": accuracy.reviewed,
            "unanswered": accuracy.unanswered, "unreadable": accuracy.unreadable, "pending": accuracy.pending}


@dataclass
class Leaderboard:
    split: str
    run_ids: list[int]
    option_order: str
    common: bool
    common_items: int | None
    endpoints: list[ModelEndpoint]
    rows: list[dict]
    baselines: list[BaselineRow] = field(default_factory=list)
    reference: Cell | None = None
    alpha: float = ALPHA
    excluded_kinds: tuple[str, ...] = ()  # quality flags whose items were left out
    excluded_items: int = 0  # flagged items of the table's item set left out
    rejected_items: int = 0  # rejected (deleted) items of the table's item set left out
    item_ids: list[int] | None = field(default=None, repr=False)  # the table's items (None: each cell's own)

    @property
    def cells(self) -> list[Cell]:
        return [c for row in self.rows for c in row["cells"] if c is not None]

    @property
    def scope(self) -> str:
        return self._items_text() + self.exclusion_text + (
            f"; {self.rejected_items} deleted item(s) left out" if self.rejected_items else "")

    def _items_text(self) -> str:
        if self.run_ids:
            return (f"the {self.common_items} items common to runs "
                    + ", ".join(f"#{pk}" for pk in self.run_ids) + " (at their current versions)")
        where = f"split {self.split}, {self.option_order} option order"
        return f"{where}, the {self.common_items} items common to every cell" if self.common else where

    @property
    def scope_shown(self) -> str:
        """`scope` in the page's language (the exports keep the English `scope`)."""
        if self.run_ids:
            text = gettext("the %(n)s items common to runs %(runs)s (at their current versions)") % {
                "n": self.common_items, "runs": ", ".join(f"#{pk}" for pk in self.run_ids)}
        else:
            text = gettext("split %(split)s, %(order)s option order") % {
                "split": self.split, "order": pgettext("option order", self.option_order)}
            if self.common:
                text = gettext("%(where)s, the %(n)s items common to every cell") % {"where": text,
                                                                                    "n": self.common_items}
        if self.excluded_kinds:
            text += gettext("; %(n)s flagged item(s) excluded (%(kinds)s, from the data-quality report)") % {
                "n": self.excluded_items, "kinds": ", ".join(self.excluded_kinds)}
        if self.rejected_items:
            text += gettext("; %(n)s deleted item(s) left out") % {"n": self.rejected_items}
        return text

    @property
    def exclusion_text(self) -> str:
        if not self.excluded_kinds:
            return ""
        return (f"; {self.excluded_items} flagged item(s) excluded "
                f"({', '.join(self.excluded_kinds)}, from the data-quality report)")

    @property
    def n_range(self) -> tuple[int, int] | None:
        ns = [c.metrics.n for c in self.cells]
        return (min(ns), max(ns)) if ns else None

    def as_json(self) -> dict:
        return {
            "split": self.split, "runs": self.run_ids, "option_order": self.option_order, "common": self.common,
            "common_items": self.common_items, "scope": self.scope, "alpha": self.alpha,
            "excluded_kinds": list(self.excluded_kinds), "excluded_items": self.excluded_items,
            "rejected_items": self.rejected_items,
            "reference": self.reference.key if self.reference else None,
            "cells": [c.as_json() for c in self.cells],
            "baselines": [{"key": b.key, "label": b.label, "note": b.note,
                           "cells": [None if c is None else {"endpoint": e.name, "n": c.n, "value": c.value,
                                                             "ci95": [c.low, c.high] if c.low is not None else None,
                                                             "items": c.items}
                                     for e, c in zip(self.endpoints, b.cells)]}
                          for b in self.baselines],
        }


def cell_key(method: str, endpoint_name: str) -> str:
    """How a cell is named on the command line and in forms: METHOD@ENDPOINT."""
    return f"{method}@{endpoint_name}"


def splits_with_runs() -> list[tuple[str, int]]:
    """The splits that have finished runs, with how many (the page offers them; it never picks one)."""
    from django.db.models import Count

    rows = (Run.objects.filter(status=RunStatus.FINISHED).exclude(split="").order_by("split").values("split")
            .annotate(runs=Count("pk")))
    return [(r["split"], r["runs"]) for r in rows]


def _runs_for_split(split: str, option_order: str) -> list[Run]:
    """Per (method, endpoint), the run of the cell: the latest finished run over the whole split (no ids, limit,
    question type or status chosen), else, when the cell has none, its finished run over the most items (the
    latest of those). A run over a subset, as a re-run of the items that changed, never takes a cell that has a
    whole-split run: bring that run up to date with a refresh instead (``services.run_refresh``)."""
    runs = (Run.objects.select_related("endpoint").defer("item_ids", "requested_ids")
            .filter(status=RunStatus.FINISHED, split=split, option_order=option_order)
            .annotate(item_count=JSONLength("item_ids"), requested_count=JSONLength("requested_ids"))
            .order_by("created_at", "pk"))
    best: dict[tuple[str, int], tuple[tuple, Run]] = {}
    for run in runs:
        whole = not run.requested_count and run.limit is None and not run.question_type and not run.item_status
        rank = (1, 0) if whole else (0, run.item_count or 0)  # later runs of an equal rank replace earlier ones
        key = (run.method, run.endpoint_id)
        if key not in best or rank >= best[key][0]:
            best[key] = (rank, run)
    return [run for _, run in best.values()]


def _chosen_runs(run_ids: Sequence[int]) -> list[Run]:
    runs = list(Run.objects.select_related("endpoint").defer("item_ids", "requested_ids").filter(pk__in=run_ids))
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if missing:
        raise Invalid(gettext("No run %(runs)s.") % {"runs": ", ".join(f"#{pk}" for pk in missing)}, field="runs")
    seen: dict[tuple[str, int], int] = {}
    for run in runs:
        other = seen.setdefault((run.method, run.endpoint_id), run.pk)
        if other != run.pk:
            raise Invalid(gettext("Runs #%(one)s and #%(other)s are the same method on the same endpoint: one cell "
                                  "each.") % {"one": other, "other": run.pk}, field="runs")
    splits = sorted({r.split for r in runs if r.split})
    if len(splits) > 1:
        raise Invalid(gettext("The runs are on different splits (%(splits)s): compare runs of one split.")
                      % {"splits": ", ".join(splits)}, field="runs")
    return runs


def leaderboard(*, split: str = "", run_ids: Sequence[int] = (), option_order: str = OptionOrder.ORIGINAL,
                reference: str = "", common: bool = False, exclude: Sequence[str] = ()) -> Leaderboard:
    """The table of a split (latest finished run per cell), or of chosen runs on their common items;
    without the items flagged (data-quality report) with any of the ``exclude`` kinds."""
    run_ids = sorted(set(run_ids))
    if run_ids:
        runs, common = _chosen_runs(run_ids), True
        split = next((r.split for r in runs if r.split), "")
    elif not split:
        raise Invalid(gettext("Choose a split (or runs): a table over several item sets would compare unlike things."),
                      field="split")
    else:
        runs = _runs_for_split(split, option_order)
    item_ids = common_item_ids(runs) if common and runs else None
    common_items = len(item_ids) if item_ids is not None else None
    kinds, excluded = (), 0
    if exclude:
        kinds = check_kinds(exclude)
        item_ids, excluded = _without_flagged(split, runs, item_ids, kinds)
    item_ids, rejected = without_rejected(split, item_ids)
    ref_run = _reference_run(runs, reference) if reference else None
    metrics = metrics_many(runs=runs, fresh_only=True, item_ids=item_ids, reference=ref_run)
    circular = circular_verdicts(runs, item_ids)
    cells = {(r.method, r.endpoint_id): Cell(run=r, metrics=metrics[r.pk][0], counts=metrics[r.pk][1],
                                             circular=circular.get(r.pk, (0, 0)) if r.rotations > 1 else None)
             for r in runs}
    for cell in cells.values():
        if cell.method == FREE_TEXT:
            cell.judged = free_text_accuracy(run=cell.run, item_ids=item_ids, fresh_only=True)
    endpoints = sorted({r.endpoint for r in runs}, key=lambda e: e.name)
    rows = []
    for name, method in METHODS.items():
        row = [cells.get((name, e.pk)) for e in endpoints]
        if any(row):
            rows.append({"method": method, "family": method.family, "cells": row})
    table = Leaderboard(split=split, run_ids=list(run_ids), option_order=option_order if not run_ids else "",
                        common=common, common_items=common_items if common_items is None
                        else common_items - excluded - rejected,
                        endpoints=endpoints, rows=rows, excluded_kinds=kinds, excluded_items=excluded,
                        rejected_items=rejected, item_ids=item_ids)
    if ref_run is not None:
        _test_against(table, ref_run, item_ids)
    table.baselines = baseline_rows(runs=[c.run for c in table.cells], endpoints=endpoints, split=split,
                                    item_ids=item_ids)
    return table


def _without_flagged(split: str, runs: Sequence[Run], item_ids: list[int] | None,
                     kinds: Sequence[str]) -> tuple[list[int], int]:
    """The table's items (the common ones, else the split's) without the flagged ones, and how many went."""
    if not split:
        raise Invalid(gettext("Excluding flagged items needs a split (the data-quality report is per split)."),
                      field="exclude")
    flagged = flagged_item_ids(split=split, kinds=kinds)
    candidates = item_ids if item_ids is not None else Item.objects.filter(split=split).values_list("pk", flat=True)
    candidates = list(candidates)
    kept = [pk for pk in candidates if pk not in flagged]
    return kept, len(candidates) - len(kept)


def without_rejected(split: str, item_ids: list[int] | None) -> tuple[list[int] | None, int]:
    """The table's items without the rejected (deleted) ones, and how many went: of the common items, else of the
    split's (the cells' own items stay None when the split has no rejected item)."""
    rows = Item.objects.filter(split=split) if item_ids is None else Item.objects.filter(pk__in=item_ids)
    gone = set(rows.filter(status=ItemStatus.REJECTED).values_list("pk", flat=True)) if item_ids or split else ()
    if not gone:
        return item_ids, 0
    kept = item_ids if item_ids is not None else rows.order_by("pk").values_list("pk", flat=True)
    return [pk for pk in kept if pk not in gone], len(gone)


def _reference_run(runs: Sequence[Run], reference: str) -> Run:
    found = next((r for r in runs if cell_key(r.method, r.endpoint.name) == reference), None)
    if found is None:
        raise Invalid(gettext("No cell %(cell)r in this table: give METHOD@ENDPOINT of one of its cells.")
                      % {"cell": reference}, field="reference")
    return found


def _test_against(table: Leaderboard, reference: Run, item_ids: list[int] | None) -> None:
    ref = next(c for c in table.cells if c.run.pk == reference.pk)
    ref.is_reference = True
    table.reference = ref
    others = [c for c in table.cells if c is not ref]
    paired = paired_counts(runs=[c.run for c in table.cells], reference=reference,
                           counts={c.run.pk: c.counts for c in table.cells}, item_ids=item_ids)
    for cell in others:
        cell.paired = paired[cell.run.pk]
    tested = [c for c in others if c.paired.n]
    for cell, p in zip(tested, mcnemar_exact_many([c.paired.discordant for c in tested])):
        cell.p_value = p
    for cell, p in zip(others, holm([c.p_value for c in others])):
        cell.p_holm = p


#: The option orders as `Leaderboard.scope_shown` says them, for the catalog.
OPTION_ORDER_WORDS = (pgettext_lazy("option order", "original"), pgettext_lazy("option order", "permuted"),
                      pgettext_lazy("option order", "circular"))
