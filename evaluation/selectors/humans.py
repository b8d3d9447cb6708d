"""Humans beside the models: participants' answers on the items of a table, at the same item versions.

Reads the studies through `studies.selectors.answers` (evaluation may read studies; never the other way).
A column's human cell covers the items of that column's cells; only answers given to the item's
current version count (the leaderboard's cells count only fresh rows too), so humans and models
are measured on the same text.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotation.models import Item
from evaluation.models import Result, Run
from evaluation.selectors.aggregates import FRESH
from evaluation.statistics.metrics import item_wilson
from studies.selectors.answers import response_outcomes


@dataclass(frozen=True)
class HumanCell:
    items: int  # items of the column answered by participants
    responses: int  # answers, and questions shown whose own time limit ran out (not correct, as in Table 3)
    correct: int
    per_item: tuple[tuple[int, int], ...] = ()  # (correct, answers + time-outs) of each item

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.responses if self.responses else None

    @property
    def interval(self) -> tuple[float | None, float | None]:
        """95% interval with the item as the unit (raters of one item share its difficulty, so they are not
        independent draws): Wilson's on the items' effective number of answers (`metrics.item_wilson`; Wilson's
        over the answers covered 73-88% with three correlated raters per item)."""
        return item_wilson([c for c, _ in self.per_item], [n for _, n in self.per_item])


def human_cells(*, runs: Sequence[Run], endpoint_ids: Sequence[int], item_ids) -> dict[int, HumanCell] | None:
    """Per endpoint column, the participants' answers on the column's items (None: no answers on any of them).

    ``item_ids`` are the table's candidate items (a list or a subquery: the split's items, or the items
    common to the chosen runs). Two queries: the answers per item on them, then (only when there are
    answers) which column has a fresh scored row of which answered item."""
    answers = response_outcomes(item_ids=item_ids)
    if not answers:
        return None
    rows = Result.objects.filter(FRESH, run_id__in=[r.pk for r in runs], item_id__in=list(answers), error="",
                                 is_correct__isnull=False)
    by_column: dict[int, set[int]] = {pk: set() for pk in endpoint_ids}
    for endpoint_id, item_id in rows.order_by().values_list("run__endpoint_id", "item_id").distinct():
        by_column[endpoint_id].add(item_id)
    out = {}
    for endpoint_id, items in by_column.items():
        answered = [answers[i] for i in items]
        # A question whose own time limit ran out counts as not correct, as in the study's Table 3.
        out[endpoint_id] = HumanCell(items=len(answered), responses=sum(a.counted for a in answered),
                                     correct=sum(a.correct for a in answered),
                                     per_item=tuple((a.correct, a.counted) for a in answered if a.counted))
    return out


def item_answers(*, item_ids) -> dict[tuple[int, int], tuple[int, int]]:
    """Participants' answers per item at its current version, {(item id, version): (correct, answers + time-outs)},
    for the paired tests against the models (evaluation.statistics.pairwise: the item is the unit)."""
    answers = response_outcomes(item_ids=item_ids)
    if not answers:
        return {}
    versions = dict(Item.objects.filter(pk__in=list(answers)).values_list("pk", "content_version"))
    return {(pk, versions[pk]): (a.correct, a.counted) for pk, a in answers.items() if pk in versions}
