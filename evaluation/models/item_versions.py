"""The content an item had at one content version, as evaluation reads it (``ItemAtVersion``).

A result, a judge label and a row's gold are about the content version the model was asked (``Result.item_version``),
not about the item as it is now: whatever shows or grades a result beside its item reads the item here. Which content
a version had is annotation's reader (``annotation.selectors.versions.item_contents_at``: the item itself at its
current version, else the latest revision snapshot at that version); this module makes it an ``ItemAtVersion``.
Shared by the selectors (pages, exports) and the judge's execution, which may not import each other.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from annotation.models import Item
from annotation.selectors.versions import item_contents_at


@dataclass(frozen=True)
class ItemAtVersion:
    """An item's content fields at one content version (what a model asked at that version saw)."""

    id: int
    content_version: int
    context: str
    question: str
    options: tuple[str, ...]
    answer_index: int
    evidence: str = ""
    reasoning: str = ""

    @property
    def answer_text(self) -> str:
        return self.options[self.answer_index] if 0 <= self.answer_index < len(self.options) else ""


def _of(item_id: int, version: int, content: dict) -> ItemAtVersion:
    def text(name: str) -> str:
        return content.get(name) or ""  # a field an old snapshot lacks (None) reads as empty

    answer_index = content.get("answer_index")
    return ItemAtVersion(id=item_id, content_version=version, context=text("context"), question=text("question"),
                         options=tuple(content.get("options") or ()),
                         answer_index=-1 if answer_index is None else int(answer_index), evidence=text("evidence"),
                         reasoning=text("reasoning"))


#: The fields of an item read here.
CONTENT = ("content_version", "context", "question", "options", "answer_index", "evidence", "reasoning")


def current_content(item: Item) -> ItemAtVersion:
    """An item's content now, at its current content version."""
    return _of(item.pk, item.content_version, {name: getattr(item, name) for name in CONTENT[1:]})


def items_at_versions(pairs: Iterable[tuple[int, int]], *,
                      current: dict[int, Item] | None = None) -> dict[tuple[int, int], ItemAtVersion]:
    """{(item, content version): its content then} for the pairs whose content is known (``item_contents_at``): a
    pair at the item's current version is the item as it is (from ``current``, the items already loaded, else one
    query), any other the latest revision at that content version. A pair whose version no revision records is left
    out: the caller says so rather than show another version's content."""
    found = item_contents_at(pairs, fields=CONTENT[1:], current=current)
    return {(item_id, version): _of(item_id, version, content) for (item_id, version), content in found.items()}
