"""Run metrics from result rows (no Django inside).

- accuracy: correct / scored rows; a parse failure (``ambiguous`` or ``missing``)
  counts as wrong; rows whose request failed (``error``) are not scored but counted;
- accuracy_parsed: accuracy over the rows whose answer parsed (reported beside it);
- 95% interval: with one row per item the Wilson interval (statsmodels); with several rows
  per item (samples, rotations) a percentile bootstrap over *items* (all rows of an item move
  together), 2,000 resamples, seeded, so the same rows always give the same interval;
- keyinfo: mean KeyInfo (ROUGE-L F1) over scored rows;
- first_option_baseline: share of the scored items whose correct option was shown first
  (what always answering the first option would score on exactly these rows).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from evaluation.prompting.answer_reading import OK
from evaluation.statistics.paired import wilson


@dataclass(frozen=True)
class RowScore:
    item_id: int
    correct: bool | None  # None for free-text rows
    parse_status: str
    keyinfo: float | None
    answer_first: bool  # the correct option was shown first
    error: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    question_type: str = ""
    stale: bool = False  # the item changed since this row was asked


@dataclass(frozen=True)
class RunMetrics:
    n: int
    errors: int
    correct: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    accuracy_parsed: float | None
    parse_failures: int
    parse_failure_rate: float | None
    keyinfo: float | None
    first_option_baseline: float | None
    tokens_in: int
    tokens_out: int

    def as_dict(self) -> dict:
        return asdict(self)


def bootstrap_ci(groups: Sequence[Sequence[float]], *, resamples: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean, resampling whole groups (items)."""
    import numpy as np  # here, not at the top: the selectors import this module at URL loading

    if not groups:
        return None, None
    sums = np.array([sum(g) for g in groups], dtype=float)
    sizes = np.array([len(g) for g in groups], dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(resamples, len(groups)))
    means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def accuracy_interval(groups: Sequence[Sequence[float]]) -> tuple[float | None, float | None]:
    """95% interval of the accuracy from each item's row outcomes (1.0 / 0.0): Wilson when every item has one
    row, else the item bootstrap (rows of one item are not independent)."""
    if all(len(g) == 1 for g in groups):
        return wilson(int(sum(g[0] for g in groups)), len(groups))
    return bootstrap_ci(groups)


def summarize(rows: Iterable[RowScore]) -> RunMetrics:
    rows = list(rows)
    scored = [r for r in rows if not r.error]
    errors = len(rows) - len(scored)
    choice = [r for r in scored if r.correct is not None]
    n = len(scored)
    correct = sum(1 for r in choice if r.correct)
    failures = sum(1 for r in scored if r.parse_status != OK)
    parsed = [r for r in choice if r.parse_status == OK]
    by_item: dict[int, list[float]] = defaultdict(list)
    for r in choice:
        by_item[r.item_id].append(1.0 if r.correct else 0.0)
    low, high = accuracy_interval(list(by_item.values()))
    keyinfos = [r.keyinfo for r in scored if r.keyinfo is not None]
    return RunMetrics(
        n=n,
        errors=errors,
        correct=correct,
        accuracy=correct / len(choice) if choice else None,
        ci_low=low,
        ci_high=high,
        accuracy_parsed=sum(1 for r in parsed if r.correct) / len(parsed) if parsed else None,
        parse_failures=failures,
        parse_failure_rate=failures / n if n else None,
        keyinfo=sum(keyinfos) / len(keyinfos) if keyinfos else None,
        first_option_baseline=sum(1 for r in choice if r.answer_first) / len(choice) if choice else None,
        tokens_in=sum(r.tokens_in for r in rows),
        tokens_out=sum(r.tokens_out for r in rows),
    )


def by_question_type(rows: Iterable[RowScore]) -> dict[str, RunMetrics]:
    groups: dict[str, list[RowScore]] = defaultdict(list)
    for r in rows:
        groups[r.question_type or "other"].append(r)
    return {name: summarize(group) for name, group in sorted(groups.items())}


def cost(*, tokens_in: int, tokens_out: int, price_in_per_mtok: float | None,
         price_out_per_mtok: float | None) -> float | None:
    """Cost in the price's currency, when a price is configured."""
    if price_in_per_mtok is None and price_out_per_mtok is None:
        return None
    return (tokens_in * float(price_in_per_mtok or 0) + tokens_out * float(price_out_per_mtok or 0)) / 1_000_000
