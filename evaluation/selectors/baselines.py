"""The leaderboard's rows below the methods, per endpoint column: what always answering the first option shown and
guessing uniformly score on the column's rows, and humans from the studies on the column's items (same versions).

The item is the unit, as in every cell: a column holds several rows of one item (one per method, sample and
rotation) and they move together (the correct option is shown first in all of an item's rows, or in none, unless
the order is permuted or rotated). So a baseline's n is the column's items, and its interval is Wilson's on the
items' effective number of rows (`metrics.item_wilson`, the cells' own interval), never narrower than Wilson's on
the items: Wilson's over the pooled rows was about sqrt(3) too narrow with three methods, and its n grew with every
method and sample run.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Max, Q
from django.utils.translation import gettext_noop

from annotation.models import Item
from evaluation.models import ModelEndpoint, Result, Run
from evaluation.selectors import counts_cache, humans
from evaluation.selectors.aggregates import FRESH, JSONLength
from evaluation.statistics.metrics import item_wilson


@dataclass(frozen=True)
class BaselineCell:
    n: int  # first option and random guess: the column's items; humans: answers (their items are ``items``)
    value: float | None  # in [0, 1]
    low: float | None = None
    high: float | None = None
    items: int | None = None

    @property
    def pct(self) -> float | None:
        return None if self.value is None else 100.0 * self.value


@dataclass(frozen=True)
class BaselineRow:
    key: str
    label: str
    note: str
    cells: list[BaselineCell | None]


#: One item of a column: (its rows, those whose correct option was shown first, its number of options).
ItemRows = tuple[int, int, int]


def column_items(runs: Sequence[Run], item_ids: Sequence[int] | None = None) -> dict[int, list[ItemRows]]:
    """Per endpoint column (id), each item's fresh, scored multiple-choice rows over the runs of the column, as
    the cells count them (optionally only these items); one query, cached while the runs are finished and
    unchanged (evaluation.selectors.counts_cache)."""
    if not runs or item_ids is not None and not item_ids:
        return {}
    digest = "all" if item_ids is None else hashlib.sha1(",".join(map(str, item_ids)).encode()).hexdigest()
    return counts_cache.remembered(f"baseline-items:{digest}", runs, lambda: _column_items(runs, item_ids))


def _column_items(runs: Sequence[Run], item_ids: Sequence[int] | None) -> dict[int, list[ItemRows]]:
    rows = Result.objects.filter(FRESH, run_id__in=[r.pk for r in runs], error="", is_correct__isnull=False)
    if item_ids is not None:
        rows = rows.filter(item_id__in=list(item_ids))
    found = (rows.order_by().values("run__endpoint", "item_id")
             .annotate(rows=Count("pk"), first=Count("pk", filter=Q(answer_first=True)),
                       options=Max(JSONLength("item__options"))).order_by("run__endpoint", "item_id"))
    out: dict[int, list[ItemRows]] = {}
    for g in found:
        out.setdefault(g["run__endpoint"], []).append((g["rows"], g["first"], g["options"] or 0))
    return out


def item_baselines(items: Sequence[ItemRows]) -> tuple[BaselineCell | None, BaselineCell | None]:
    """The first-option and random-guess cells of a column's items: each the share of the column's rows (as every
    cell's accuracy), with n the items and, for the first option, `item_wilson` over them (the random guess is an
    expectation, without an interval). None for a column without items."""
    total = sum(rows for rows, _, _ in items)
    if not total:
        return None, None
    low, high = item_wilson([first for _, first, _ in items], [rows for rows, _, _ in items])
    first = BaselineCell(n=len(items), value=sum(first for _, first, _ in items) / total, low=low, high=high)
    chance = sum(rows / options for rows, _, options in items if options) / total
    return first, BaselineCell(n=len(items), value=chance)


def baseline_rows(*, runs: Sequence[Run], endpoints: Sequence[ModelEndpoint], split: str,
                  item_ids: Sequence[int] | None) -> list[BaselineRow]:
    """Per column (``endpoints``, in the table's order): the first option and the random guess on the column's rows
    of ``runs`` (the table's cells), and humans on the column's items at the same item versions."""
    per_column = column_items(runs, item_ids)
    first, chance = zip(*(item_baselines(per_column.get(e.pk, ())) for e in endpoints)) if endpoints else ((), ())
    rows = [
        BaselineRow("first-option", gettext_noop("Always the first option"),
                    gettext_noop("the share of the column's rows whose correct option was shown first"), list(first)),
        BaselineRow("random", gettext_noop("Random guess (expected)"),
                    gettext_noop("the mean of 1 / number of options over the column's rows"), list(chance)),
    ]
    candidates = item_ids if item_ids is not None else Item.objects.filter(split=split).values("pk")
    people = humans.human_cells(runs=runs, endpoint_ids=[e.pk for e in endpoints], item_ids=candidates)
    if people is not None:
        cells = []
        for endpoint in endpoints:
            h = people[endpoint.pk]
            low, high = h.interval
            cells.append(BaselineCell(n=h.responses, value=h.accuracy, low=low, high=high, items=h.items)
                         if h.responses else None)
        rows.append(BaselineRow("humans", gettext_noop("Humans (studies)"),
                                gettext_noop("participants' answers on the column's items at the same item versions"),
                                cells))
    return rows
