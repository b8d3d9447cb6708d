"""The numbers behind the paper's figures, from plain rows (no Django inside; evaluation.figures.drawing draws them).

- Fig. 4 :func:`keyinfo_accuracy`: one point per run (KeyInfo, accuracy) and Pearson's r
  (``scipy.stats.pearsonr``) across the runs;
- Fig. 5 :func:`accuracy_by_feature`: accuracy per bin of an item feature (context length, option
  length, number of clues, number of reasoning steps), one series per run, with each bin's count;
- Fig. 6 :func:`accuracy_by_question_type`: accuracy per question type, one series per run;
- :func:`human_vs_model`: per item, the share of participants right against the share of model rows
  right, with Pearson's r over the items both answered.

Accuracy here is over scored rows (a parse failure counts as wrong, a failed request is not a row),
as in evaluation.statistics.metrics. Every figure says its n.
"""
from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from foundation.words import gettext, gettext_noop

#: Figure names, as on the page, in the command and in the download URLs: (title, kind).
FIGURES: dict[str, str] = {
    "keyinfo-accuracy": gettext_noop("KeyInfo against accuracy across runs (Fig. 4)"),
    "accuracy-by-context-length": gettext_noop("Accuracy by context length (Fig. 5a)"),
    "accuracy-by-option-length": gettext_noop("Accuracy by option length (Fig. 5b)"),
    "accuracy-by-clues": gettext_noop("Accuracy by number of clues (Fig. 5c)"),
    "accuracy-by-steps": gettext_noop("Accuracy by number of reasoning steps (Fig. 5d)"),
    "accuracy-by-question-type": gettext_noop("Accuracy per question type (Fig. 6)"),
    "human-vs-model": gettext_noop("Human against model accuracy per item"),
}
#: Fig. 5's features: figure name -> (ItemFacts attribute, axis label).
FEATURES: dict[str, tuple[str, str]] = {
    "accuracy-by-context-length": ("context_words", gettext_noop("context length (words)")),
    "accuracy-by-option-length": ("option_words", gettext_noop("option length (mean words per option)")),
    "accuracy-by-clues": ("clues", gettext_noop("number of clues (evidence lines)")),
    "accuracy-by-steps": ("steps", gettext_noop("number of reasoning steps")),
}


@dataclass(frozen=True)
class ItemFacts:
    item_id: int
    context_words: int
    option_words: float
    clues: int
    steps: int
    question_type: str


@dataclass(frozen=True)
class RunRows:
    """One run's scored rows: (item id, correct) with correct a bool (parse failures are False)."""

    run_id: int
    label: str  # e.g. "naive · gpt-4"
    rows: tuple[tuple[int, bool], ...]
    keyinfo: float | None = None  # the mean KeyInfo over the same rows

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def accuracy(self) -> float | None:
        return sum(c for _, c in self.rows) / len(self.rows) if self.rows else None


def _r(xs: Sequence[float], ys: Sequence[float]) -> tuple[float | None, float | None]:
    """Pearson's r and its two-sided p-value; None when undefined (fewer than 2 points or a constant)."""
    from scipy import stats  # here, not at the top (numpy too): the pages import this module at URL loading

    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.pearsonr(xs, ys)
    r, p = float(result.statistic), float(result.pvalue)
    return (None, None) if math.isnan(r) else (r, None if math.isnan(p) else p)


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    n: int
    run_id: int | None = None
    item_id: int | None = None


@dataclass(frozen=True)
class Scatter:
    name: str
    title: str
    x_label: str
    y_label: str
    points: tuple[Point, ...]
    r: float | None
    p_value: float | None
    note: str = ""

    @property
    def n(self) -> int:
        return len(self.points)

    def as_dict(self) -> dict:
        return {**asdict(self), "n": self.n}


def keyinfo_accuracy(runs: Sequence[RunRows], *, note: str = "") -> Scatter:
    """Fig. 4: (KeyInfo, accuracy) per run with rows and a KeyInfo; r across them."""
    points = tuple(Point(label=r.label, x=r.keyinfo, y=r.accuracy, n=r.n, run_id=r.run_id)
                   for r in runs if r.rows and r.keyinfo is not None)
    r, p = _r([pt.x for pt in points], [pt.y for pt in points])
    return Scatter(name="keyinfo-accuracy", title=gettext(FIGURES["keyinfo-accuracy"]),
                   x_label=gettext("KeyInfo (ROUGE-L F1)"), y_label=gettext("accuracy"), points=points, r=r, p_value=p, note=note)


@dataclass(frozen=True)
class Bin:
    low: float
    high: float  # inclusive
    label: str


def _label(low: float, high: float, integral: bool) -> str:
    fmt = (lambda v: f"{v:.0f}") if integral else (lambda v: f"{v:.1f}")  # noqa: E731
    return fmt(low) if low == high else f"{fmt(low)}–{fmt(high)}"


def make_bins(values: Sequence[float], *, count: int = 5, max_values: int = 12, min_share: float = 0.03) -> list[Bin]:
    """Bins over the observed values, each [low, high] over values seen:

    - one per value when there are at most ``count + 2`` distinct ones;
    - whole numbers with at most ``max_values`` distinct values (clues, steps): one per value, the sparse
      tails (under ``min_share`` of the items, at least 10) merged inward, so no point rests on a handful;
    - else ``count`` bins of about equal counts (quantiles).
    """
    import numpy as np

    distinct = sorted(set(values))
    if not distinct:
        return []
    integral = all(float(v).is_integer() for v in distinct)
    if len(distinct) <= count + 2:
        return [Bin(v, v, _label(v, v, integral)) for v in distinct]
    if integral and len(distinct) <= max_values:
        counts = Counter(values)
        least = max(10, min_share * len(values))
        groups = [[v] for v in distinct]
        while len(groups) > 1 and sum(counts[v] for v in groups[0]) < least:
            groups[1] = groups[0] + groups[1]
            groups.pop(0)
        while len(groups) > 1 and sum(counts[v] for v in groups[-1]) < least:
            groups[-2] = groups[-2] + groups[-1]
            groups.pop()
        return [Bin(g[0], g[-1], _label(g[0], g[-1], integral)) for g in groups]
    ordered = np.sort(np.asarray(values, dtype=float))
    cuts = sorted({float(np.quantile(ordered, q, method="higher")) for q in np.linspace(0, 1, count + 1)[1:-1]})
    bins, low_index = [], 0
    for cut in cuts + [distinct[-1]]:
        members = [v for v in distinct[low_index:] if v <= cut]
        if not members:
            continue
        low_index += len(members)
        bins.append(Bin(members[0], members[-1], _label(members[0], members[-1], integral)))
    return bins


def _bin_of(bins: Sequence[Bin], value: float) -> int | None:
    for index, b in enumerate(bins):
        if b.low <= value <= b.high:
            return index
    return None


@dataclass(frozen=True)
class Cell:
    group: str
    n: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.n if self.n else None


@dataclass(frozen=True)
class Series:
    label: str
    run_id: int
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Grouped:
    """Accuracy per group (a bin or a question type), one series per run; each cell says its n."""

    name: str
    title: str
    x_label: str
    groups: tuple[str, ...]
    items_per_group: tuple[int, ...]
    series: tuple[Series, ...]
    note: str = ""

    def as_dict(self) -> dict:
        data = asdict(self)
        for series, raw in zip(self.series, data["series"]):
            for cell, out in zip(series.cells, raw["cells"]):
                out["accuracy"] = cell.accuracy
        return data


def _grouped(name: str, x_label: str, groups: list[str], group_of: Mapping[int, int], runs: Sequence[RunRows],
             note: str) -> Grouped:
    series = []
    for run in runs:
        n, correct = [0] * len(groups), [0] * len(groups)
        for item_id, right in run.rows:
            index = group_of.get(item_id)
            if index is not None:
                n[index] += 1
                correct[index] += bool(right)
        series.append(Series(label=run.label, run_id=run.run_id,
                             cells=tuple(Cell(g, n[i], correct[i]) for i, g in enumerate(groups))))
    per_group = [0] * len(groups)
    for index in group_of.values():
        per_group[index] += 1
    return Grouped(name=name, title=gettext(FIGURES[name]), x_label=gettext(x_label), groups=tuple(groups),
                   items_per_group=tuple(per_group), series=tuple(series), note=note)


def accuracy_by_feature(name: str, runs: Sequence[RunRows], facts: Mapping[int, ItemFacts], *, bins: int = 5,
                        note: str = "") -> Grouped:
    """Fig. 5: bins of one feature over the items the runs answered (the same bins for every run)."""
    attribute, x_label = FEATURES[name]
    answered = {item_id for run in runs for item_id, _ in run.rows if item_id in facts}
    values = {item_id: getattr(facts[item_id], attribute) for item_id in answered}
    edges = make_bins(list(values.values()), count=bins)
    group_of = {item_id: _bin_of(edges, value) for item_id, value in values.items()}
    return _grouped(name, x_label, [b.label for b in edges], group_of, runs, note)


def accuracy_by_question_type(runs: Sequence[RunRows], facts: Mapping[int, ItemFacts], *, order: Sequence[str],
                              note: str = "") -> Grouped:
    """Fig. 6: the question types present among the answered items, in ``order`` (the paper's)."""
    answered = {item_id for run in runs for item_id, _ in run.rows if item_id in facts}
    present = [t for t in order if any(facts[i].question_type == t for i in answered)]
    group_of = {i: present.index(facts[i].question_type) for i in answered}
    return _grouped("accuracy-by-question-type", gettext_noop("question type"), present, group_of, runs, note)


def human_vs_model(human: Mapping[int, tuple[int, int]], model: Mapping[int, tuple[int, int]], *,
                   model_label: str = "models", note: str = "") -> Scatter:
    """Per item answered by both: (share of participants right, share of model rows right); ``human`` and
    ``model`` map item id -> (correct, n). r over those items."""
    points = tuple(
        Point(label=gettext("item %(id)s", id=item_id), x=human[item_id][0] / human[item_id][1], y=model[item_id][0] / model[item_id][1],
              n=human[item_id][1], item_id=item_id)
        for item_id in sorted(set(human) & set(model)) if human[item_id][1] and model[item_id][1]
    )
    r, p = _r([pt.x for pt in points], [pt.y for pt in points])
    return Scatter(name="human-vs-model", title=gettext(FIGURES["human-vs-model"]),
                   x_label=gettext("participants right (share)"),
                   y_label=gettext("model rows right (share, %(models)s)", models=model_label), points=points, r=r, p_value=p, note=note)


def per_item(runs: Sequence[RunRows]) -> dict[int, tuple[int, int]]:
    """Item id -> (correct rows, rows) over the runs."""
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for run in runs:
        for item_id, right in run.rows:
            counts[item_id][0] += bool(right)
            counts[item_id][1] += 1
    return {item_id: (c, n) for item_id, (c, n) in counts.items()}


@dataclass
class Selection:
    """What a figure was drawn over, said under it: the runs, the items kept and dropped, and why."""

    split: str
    runs: int = 0
    items: int = 0
    dropped_not_common: int = 0
    dropped_flagged: int = 0
    excluded_kinds: tuple[str, ...] = ()
    stale_rows: int = 0
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        parts = [gettext("split %(split)s", split=self.split), gettext("%(n)s run(s)", n=self.runs),
                 gettext("%(n)s item(s) common to them", n=self.items)]
        if self.dropped_not_common:
            parts.append(gettext("%(n)s item(s) not in every run dropped", n=self.dropped_not_common))
        if self.excluded_kinds:
            parts.append(gettext("%(n)s flagged item(s) excluded (%(kinds)s)", n=self.dropped_flagged,
                             kinds=", ".join(self.excluded_kinds)))
        return "; ".join(parts + self.notes)
