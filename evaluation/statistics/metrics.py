"""Run metrics from result rows (no Django inside).

- accuracy: correct / scored rows; a parse failure (``ambiguous`` or ``missing``)
  counts as wrong; rows whose request failed (``error``) are not scored but counted;
- accuracy_parsed: accuracy over the rows whose answer parsed (reported beside it);
- 95% interval: with one row per item the Wilson interval (statsmodels); with several rows
  per item (samples, rotations) Wilson's on the items' effective number of rows (`item_wilson`: all
  rows of an item move together; never narrower than Wilson's on the items; none from one item);
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
    rejected: bool = False  # the item was rejected (deleted): the leaderboard leaves its rows out


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


def item_wilson(correct: Sequence[float], rows: Sequence[int]) -> tuple[float | None, float | None]:
    """95% interval of a share of rows whose items are the independent units (``correct[i]`` of ``rows[i]`` rows
    right on item i: a model's samples or rotations, the participants who answered it): Wilson's score interval
    of the share on the items' effective number of rows, n_eff = p (1 - p) / V with V the between-item (ratio)
    variance of the share (Korn and Graubard, "Confidence intervals for proportions with small expected number of
    positive counts estimated from survey data", Survey Methodology 1998), never more than the number of items
    (rows of one item move together at worst; a share of 0 or 1, with V = 0, counts the items). With one row per
    item it is Wilson's on the rows; one item with several rows gives none (no spread between items to see).
    A percentile bootstrap over items collapsed to a point there ((1.0, 1.0) for 20 items all right)."""
    if not rows or sum(rows) == 0:
        return None, None
    items = len(rows)
    if all(size == 1 for size in rows):
        return wilson(int(sum(correct)), items)
    if items < 2:
        return None, None
    total = sum(rows)
    share = sum(correct) / total
    variance = sum((c - share * size) ** 2 for c, size in zip(correct, rows)) / total ** 2 * items / (items - 1)
    n_eff = float(items)
    if variance > 0 and 0 < share < 1:
        n_eff = max(1.0, min(n_eff, share * (1 - share) / variance))
    return wilson(share * n_eff, n_eff)


def accuracy_interval(groups: Sequence[Sequence[float]]) -> tuple[float | None, float | None]:
    """95% interval of the accuracy from each item's row outcomes (1.0 / 0.0): `item_wilson` (Wilson's on the
    rows when every item has one row; rows of one item are not independent)."""
    return item_wilson([sum(g) for g in groups], [len(g) for g in groups])


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
