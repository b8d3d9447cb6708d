"""Every pair of a leaderboard's cells compared (issue 21, point 4): exact McNemar between every two cells on the
(item, content version) pairs both have, and humans (study participants) against each cell on the items both
answered, corrected as one family by Holm or Benjamini-Hochberg (evaluation.statistics.pairwise says how)."""
from __future__ import annotations

from annotation.models import Item
from evaluation.selectors import humans as human_answers
from evaluation.selectors.leaderboard import Leaderboard
from evaluation.selectors.outcomes import run_outcomes
from evaluation.statistics.pairwise import Pairwise, pairwise


def pairwise_table(table: Leaderboard, *, correction: str = "holm") -> Pairwise:
    """The pairwise tests of the cells ``table`` shows (its items: the common ones, else each pair's own)."""
    cells = table.cells
    outcomes = run_outcomes([c.run for c in cells], table.item_ids)
    if table.item_ids is not None:
        candidates = table.item_ids
    else:
        candidates = Item.objects.filter(split=table.split).values("pk")
    people = human_answers.item_answers(item_ids=candidates) if cells else {}
    result = pairwise([c.key for c in cells], [outcomes[c.run.pk] for c in cells], correction=correction,
                      humans=people or None)
    result.notes = [
        "Cells against cells: two-sided exact McNemar test on the (item, version) pairs both have "
        "(one outcome per item: its first sample; with circular order, right in every rotation).",
        f"All {len(result.tests)} tests are one family, corrected by {result.correction_label}; "
        f"* = corrected p < {result.alpha}.",
    ]
    if people:
        result.notes.insert(1, "Humans against a cell: the item is the unit (its raters share its difficulty). "
                               "Per item d = share of its raters right - the cell right (1/0); paired sign-flip "
                               "permutation test of mean d = 0 (exact up to 16 items that differ, else 20,000 "
                               "seeded draws) and a 95% bootstrap interval over items of the difference.")
    return result
