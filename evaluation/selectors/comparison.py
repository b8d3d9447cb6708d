"""Two runs side by side on the (item, version) pairs both have: the paired table, exact McNemar, the items
where they differ.

An item's outcome is its first sample (with circular order: right only if every rotation of the
first sample is), as in the leaderboard. A pair needs the same item *version* on both sides: a run
that saw an item before it was rewritten is not compared with one that saw the new text on it.
Rejected (deleted) items are left out, by the leaderboard's own rule, and counted.
Runs on different splits are refused: they share no items, and a table of nothing would mislead.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.translation import gettext

from evaluation.models import Result, Run
from evaluation.models.item_versions import items_at_versions
from evaluation.selectors.leaderboard import without_rejected
from evaluation.selectors.quality import check_kinds, flagged_item_ids
from evaluation.statistics.paired import Paired, pair_outcomes
from foundation.errors import Invalid


@dataclass(frozen=True)
class Side:
    result_id: int
    correct: bool
    answer_index: int | None


@dataclass(frozen=True)
class DiffRow:
    item_id: int
    external_id: str
    question_type: str
    item_version: int
    current_version: int
    gold: int | None  # the correct option at item_version (None: no revision records that version)
    a: Side
    b: Side

    @property
    def stale(self) -> bool:
        return self.item_version != self.current_version

    def as_json(self) -> dict:
        return {"item": self.item_id, "external_id": self.external_id, "question_type": self.question_type,
                "item_version": self.item_version, "stale": self.stale, "gold": self.gold,
                "a_correct": self.a.correct, "a_answer": self.a.answer_index, "a_result": self.a.result_id,
                "b_correct": self.b.correct, "b_answer": self.b.answer_index, "b_result": self.b.result_id}


@dataclass(frozen=True)
class RunComparison:
    a: Run
    b: Run
    paired: Paired
    stale_pairs: int  # pairs at an item version that is no longer the item's
    differing: list[DiffRow]
    excluded_kinds: tuple[str, ...] = ()  # quality flags whose items were left out
    excluded_items: int = 0  # flagged items either run answered, left out
    rejected_items: int = 0  # rejected (deleted) items either run answered, left out (as the leaderboard does)

    def as_json(self) -> dict:
        p = self.paired
        return {"a": self.a.pk, "b": self.b.pk, "split": self.a.split or self.b.split, "pairs": p.n,
                "dropped": {"only_a": p.ref_only, "only_b": p.other_only}, "stale_pairs": self.stale_pairs,
                "table": p.table(), "discordant": list(p.discordant), "p_value": p.p_value,
                "accuracy_a": (p.both_right + p.ref_right_other_wrong) / p.n if p.n else None,
                "accuracy_b": (p.both_right + p.ref_wrong_other_right) / p.n if p.n else None,
                "excluded_kinds": list(self.excluded_kinds), "excluded_items": self.excluded_items,
                "rejected_items": self.rejected_items, "differing": [d.as_json() for d in self.differing]}


_FIELDS = ("pk", "item_id", "item_version", "is_correct", "answer_index", "item__content_version", "item__external_id",
           "item__question_type", "item__answer_index")


def _outcomes(run: Run) -> tuple[dict[tuple[int, int], bool], dict[tuple[int, int], tuple]]:
    """{(item, version): correct} of complete first samples, and the first row of each for display (one query)."""
    rotations = getattr(run, "rotations", 1)
    rows = (Result.objects.filter(run=run, sample_index__lt=rotations, error="", is_correct__isnull=False)
            .order_by("item_id", "sample_index").values_list(*_FIELDS))
    groups: dict[tuple[int, int], list] = {}
    for row in rows:
        groups.setdefault((row[1], row[2]), []).append(row)
    outcome = {key: all(r[3] for r in g) for key, g in groups.items() if len(g) == rotations}
    return outcome, {key: groups[key][0] for key in outcome}


def run_comparison(*, a: Run, b: Run, exclude: Sequence[str] = ()) -> RunComparison:
    """``exclude``: leave out the items flagged with these kinds in the data-quality report of the runs' split."""
    if a.pk == b.pk:
        raise Invalid(gettext("Choose two different runs."), field="b")
    if a.split and b.split and a.split != b.split:
        raise Invalid(gettext("Run #%(a)s is on split %(split_a)s and run #%(b)s on %(split_b)s: they share no items.")
                      % {"a": a.pk, "split_a": a.split, "b": b.pk, "split_b": b.split}, field="b")
    outcome_a, rows_a = _outcomes(a)
    outcome_b, rows_b = _outcomes(b)
    kinds, excluded = (), 0
    if exclude:
        kinds = check_kinds(exclude)
        split = a.split or b.split
        if not split:
            raise Invalid(gettext("Excluding flagged items needs runs on a split (the data-quality report is per "
                                  "split)."),
                          field="exclude")
        flagged = flagged_item_ids(split=split, kinds=kinds)
        excluded = len({item for item, _ in (*outcome_a, *outcome_b)} & flagged)
        outcome_a = {key: v for key, v in outcome_a.items() if key[0] not in flagged}
        outcome_b = {key: v for key, v in outcome_b.items() if key[0] not in flagged}
    outcome_a, outcome_b, rejected = _without_rejected_items(a.split or b.split, outcome_a, outcome_b)
    paired = pair_outcomes(outcome_a, outcome_b)
    common = outcome_a.keys() & outcome_b.keys()
    differing = []
    keys = [key for key in sorted(common) if outcome_a[key] != outcome_b[key]]
    # A stale pair's gold is the one both rows were scored against: the item's at the pair's version.
    asked = items_at_versions([key for key in keys if rows_a[key][5] != key[1]])
    for key in keys:
        ra, rb = rows_a[key], rows_b[key]
        gold = ra[8] if ra[5] == key[1] else asked[key].answer_index if key in asked else None
        differing.append(DiffRow(item_id=key[0], external_id=ra[6], question_type=ra[7], item_version=key[1],
                                 current_version=ra[5], gold=gold, a=Side(ra[0], outcome_a[key], ra[4]),
                                 b=Side(rb[0], outcome_b[key], rb[4])))
    stale = sum(1 for key in common if rows_a[key][5] != key[1])
    return RunComparison(a=a, b=b, paired=paired, stale_pairs=stale, differing=differing, excluded_kinds=kinds,
                         excluded_items=excluded, rejected_items=rejected)


def _without_rejected_items(split: str, outcome_a: dict, outcome_b: dict) -> tuple[dict, dict, int]:
    """Both runs' outcomes without the rejected (deleted) items, by the leaderboard's rule, and how many of the items
    either run answered went."""
    answered = sorted({item for item, _ in (*outcome_a, *outcome_b)})
    kept, rejected = without_rejected(split, answered)
    if not rejected:
        return outcome_a, outcome_b, 0
    keep = set(kept)
    return ({key: v for key, v in outcome_a.items() if key[0] in keep},
            {key: v for key, v in outcome_b.items() if key[0] in keep}, rejected)
