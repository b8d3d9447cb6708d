"""Prompt templates (paper Tables 10-18, kept as files under prompt_templates/) and how items are shown.

No Django inside. Options are shown numbered ``1..N`` (or lettered ``A..``), in the
original order or in a permutation seeded by (run seed, item id) with the answer
remapped to its shown position.
"""
from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluation.prompting.answer_reading import option_labels

TEMPLATES_DIR = Path(__file__).resolve().parent / "prompt_templates"


@functools.cache
def template_text(name: str) -> str:
    return (TEMPLATES_DIR / f"{name}.txt").read_text(encoding="utf-8").rstrip("\n")


def render(name: str, **values: str) -> str:
    """Fill a template's ``{placeholders}`` (values are inserted verbatim)."""
    return template_text(name).format_map(values)


def templates_hash(names: tuple[str, ...], *, salt: str = "", read: Callable[[str], str] = template_text) -> str:
    """A short content hash of the named templates (their text from ``read``): stored on every run as its
    prompt version."""
    digest = hashlib.sha256(salt.encode())
    for name in names:
        digest.update(name.encode() + b"\0" + read(name).encode() + b"\0")
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class ItemView:
    """What a prompting method may know about an item (a plain copy of annotation.Item)."""

    id: int
    context: str
    question: str
    options: tuple[str, ...]
    answer_index: int
    key_information: tuple[str, ...] = ()
    reasoning: str = ""


def permutation(*, seed: int, item_id: int, count: int) -> tuple[int, ...]:
    """The shown order of an item's options: a shuffle seeded by (seed, item id)."""
    order = list(range(count))
    random.Random(f"options:{seed}:{item_id}").shuffle(order)
    return tuple(order)


@dataclass(frozen=True)
class Presented:
    """An item as shown to the model: ``order[shown position] = original option index``."""

    item: ItemView
    order: tuple[int, ...]
    labels: tuple[str, ...]
    label_style: str = "numbers"

    @property
    def options(self) -> list[str]:
        return [self.item.options[i] for i in self.order]

    @property
    def answer_shown(self) -> int:
        return self.order.index(self.item.answer_index)

    @property
    def answer_label(self) -> str:
        return self.labels[self.answer_shown]

    @property
    def options_block(self) -> str:
        return "\n".join(f"{label}. {text}" for label, text in zip(self.labels, self.options))

    @property
    def answer_format(self) -> str:
        return "/".join(self.labels)

    @property
    def gold_key_information(self) -> str:
        return "\n".join(self.item.key_information)

    def original_index(self, shown_index: int | None) -> int | None:
        return None if shown_index is None else self.order[shown_index]

    def fields(self) -> dict[str, str]:
        return {
            "context": self.item.context,
            "question": self.item.question,
            "options": self.options_block,
            "answer_format": self.answer_format,
        }


def present(item: ItemView, *, seed: int, permute: bool, label_style: str = "numbers") -> Presented:
    count = len(item.options)
    order = permutation(seed=seed, item_id=item.id, count=count) if permute else tuple(range(count))
    return Presented(item=item, order=order, labels=tuple(option_labels(count, label_style)), label_style=label_style)


def demonstration_order(*, pool_ids: list[int], seed: int) -> list[int]:
    """The demonstration pool in the run seed's order (``choose_demonstrations`` takes the first ones)."""
    order = sorted(pool_ids)
    random.Random(f"demos:{seed}").shuffle(order)
    return order


def first_demonstrations(order: list[int], *, exclude: int, shots: int = 3) -> list[int]:
    """The first ``shots`` ids of a ``demonstration_order`` that are not the evaluated item."""
    return [i for i in order[: shots + 1] if i != exclude][:shots]


def choose_demonstrations(*, pool_ids: list[int], seed: int, exclude: int, shots: int = 3) -> list[int]:
    """``shots`` train-item ids chosen by the run seed; never the evaluated item itself."""
    return first_demonstrations(demonstration_order(pool_ids=pool_ids, seed=seed), exclude=exclude, shots=shots)
