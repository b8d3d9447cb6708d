"""The content an item had at one content version, read from annotation's revision snapshots.

A result, a judge label and a row's gold are about the content version the model was asked (``Result.item_version``),
not about the item as it is now: whatever shows or grades a result beside its item reads the item here. At most two
queries for any number of (item, version) pairs: the item's current content is its current version (also when no
revision records it, or it was changed outside the services); another version is its revision snapshot. Shared by
the selectors (pages, exports) and the judge's execution, which may not import each other.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from annotation.models import Item, ItemRevision


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
    return ItemAtVersion(id=item_id, content_version=version, context=content.get("context", ""),
                         question=content.get("question", ""), options=tuple(content.get("options") or ()),
                         answer_index=int(content.get("answer_index", -1)), evidence=content.get("evidence", ""),
                         reasoning=content.get("reasoning", ""))


#: The fields of an item read here.
CONTENT = ("content_version", "context", "question", "options", "answer_index", "evidence", "reasoning")


def current_content(item: Item) -> ItemAtVersion:
    """An item's content now, at its current content version."""
    return _of(item.pk, item.content_version, {name: getattr(item, name) for name in CONTENT[1:]})


def items_at_versions(pairs: Iterable[tuple[int, int]], *,
                      current: dict[int, Item] | None = None) -> dict[tuple[int, int], ItemAtVersion]:
    """{(item, content version): its content then} for the pairs whose content is known: a pair at the item's current
    version is the item as it is (from ``current``, the items already loaded, else one query), any other the latest
    revision at that content version (revisions sharing one content version share its content). A pair whose
    version no revision records is left out: the caller says so rather than show another version's content."""
    wanted = set(pairs)
    current = dict(current or {})
    unloaded = {i for i, _ in wanted} - current.keys()
    if unloaded:
        current.update((item.pk, item) for item in Item.objects.filter(pk__in=unloaded).only("id", *CONTENT))
    found = {(i, v): current_content(current[i]) for i, v in wanted
             if i in current and current[i].content_version == v}
    rest = wanted - found.keys()
    if rest:
        revisions = (ItemRevision.objects.filter(item_id__in={i for i, _ in rest},
                                                 content_version__in={v for _, v in rest})
                     .order_by("item_id", "number").values_list("item_id", "content_version", "snapshot"))
        for item_id, version, snapshot in revisions:
            if (item_id, version) in rest:
                found[(item_id, version)] = _of(item_id, version, snapshot or {})  # the latest number wins
    return found
