"""Circular option order (MMBench's CircularEval), no Django inside.

Each sample of an item is asked once per cyclic rotation of its options: rotation ``r`` shows
original option ``(position + r) mod N`` at each position, so every option is shown first once.
An (item, sample) counts as correct only when every rotation is; the plain accuracy over all
rows is reported beside it.

Storage: a rotation is a row of its own, ``sample_index = sample * rotations + rotation``
(:func:`slot`, :func:`split_slot`), so the result row stays unique on (run, item, sample index)
and exact resume, the upsert and the progress count need nothing new. A run's ``rotations`` is
the largest option count of its items; an item with fewer options repeats its rotations
(rotation ``r`` shows the shift ``r mod N``), which changes neither the circular verdict nor the
per-item weight of the plain accuracy.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from evaluation.prompting.answer_reading import option_labels
from evaluation.prompting.prompts import ItemView, Presented


def rotation_order(count: int, rotation: int) -> tuple[int, ...]:
    """``order[shown position] = original option index`` for one cyclic rotation."""
    return tuple((position + rotation) % count for position in range(count))


def present_rotated(item: ItemView, *, rotation: int, label_style: str = "numbers") -> Presented:
    count = len(item.options)
    return Presented(item=item, order=rotation_order(count, rotation),
                     labels=tuple(option_labels(count, label_style)), label_style=label_style)


def slot(sample: int, rotation: int, rotations: int) -> int:
    """The row's sample index of (sample, rotation)."""
    return sample * rotations + rotation


def split_slot(sample_index: int, rotations: int) -> tuple[int, int]:
    """(sample, rotation) of a row's sample index."""
    return divmod(sample_index, rotations)


@dataclass(frozen=True)
class CircularAccuracy:
    """Circular accuracy over (item, sample) groups, and the plain accuracy over their rows."""

    rotations: int
    n: int  # (item, sample) groups with every rotation scored
    correct: int  # ... of which every rotation is correct
    accuracy: float | None
    incomplete: int  # groups with a rotation missing or failed (not scored)
    plain_n: int  # scored rows
    plain_correct: int
    plain_accuracy: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def circular_accuracy(rows: Iterable[tuple[int, int, bool | None]], *, rotations: int) -> CircularAccuracy:
    """``rows`` are (item id, sample index, correct); correct is None for a row that was not scored
    (a failed request). A group is scored only when all its ``rotations`` rows are."""
    groups: dict[tuple[int, int], list[bool | None]] = defaultdict(list)
    plain_n = plain_correct = 0
    for item_id, sample_index, correct in rows:
        groups[(item_id, sample_index // rotations)].append(correct)
        if correct is not None:
            plain_n += 1
            plain_correct += bool(correct)
    complete = [g for g in groups.values() if len(g) == rotations and all(c is not None for c in g)]
    correct = sum(1 for g in complete if all(g))
    return CircularAccuracy(
        rotations=rotations, n=len(complete), correct=correct,
        accuracy=correct / len(complete) if complete else None, incomplete=len(groups) - len(complete),
        plain_n=plain_n, plain_correct=plain_correct,
        plain_accuracy=plain_correct / plain_n if plain_n else None,
    )
