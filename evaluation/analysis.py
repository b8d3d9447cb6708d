"""Reads for the analysis pages and commands: the circular accuracy of a run, and the inputs of the
figures (evaluation.figure_data turns them into the plotted numbers, evaluation.figures draws them)."""
from __future__ import annotations

from .circular import CircularAccuracy, circular_accuracy
from .models import OptionOrder, Result, Run


def run_circular_accuracy(*, run: Run) -> CircularAccuracy | None:
    """Circular and plain accuracy of a circular run (None for other option orders), one query."""
    if run.option_order != OptionOrder.CIRCULAR:
        return None
    rows = Result.objects.filter(run=run).values_list("item_id", "sample_index", "is_correct", "error")
    return circular_accuracy(((item, index, None if error else correct) for item, index, correct, error in rows),
                             rotations=run.rotations)

