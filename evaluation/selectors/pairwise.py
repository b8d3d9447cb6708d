"""Every pair of a leaderboard's cells compared (issue 21, point 4): exact McNemar between every two cells on the
(item, content version) pairs both have, and humans (study participants) against each cell on the items both
answered, corrected as one family by Holm or Benjamini-Hochberg (evaluation.statistics.pairwise says how)."""
from __future__ import annotations

from django.utils.translation import gettext

from annotation.models import Item
from evaluation.selectors import humans as human_answers
from evaluation.selectors.leaderboard import Leaderboard
from evaluation.selectors.outcomes import run_outcomes
from evaluation.statistics.paired import CORRECTIONS
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
        gettext("Cells against cells: two-sided exact McNemar test on the (item, version) pairs both have "
                "(one outcome per item: its first sample; with circular order, right in every rotation)."),
        gettext("All %(n)s tests are one family, corrected by %(correction)s; * = corrected p < %(alpha)s.") % {
            "n": len(result.tests), "correction": correction_shown(result), "alpha": result.alpha},
    ]
    if people:
        result.notes.insert(1, gettext(
            "Humans against a cell: the item is the unit (its raters share its difficulty). Per item d = share of "
            "its raters right - the cell right (1/0); paired sign-flip permutation test of mean d = 0 (exact up to "
            "16 items that differ, else 20,000 seeded draws) and a 95%% bootstrap interval over items of the "
            "difference.") % {})
    return result


def correction_shown(result: Pairwise) -> str:
    """The correction's name and what it controls, in the page's language."""
    name, controls = CORRECTIONS[result.correction]
    return f"{name} ({gettext(controls)})"
