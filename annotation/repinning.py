"""Content versions from an item's revision history, and the re-pinning of rows that recorded an item version
(no Django inside; the data migrations call it with plain rows).

Before content versions, results, responses and judge labels recorded ``Item.version``, which also rose with a
workflow status. A revision whose snapshot equals the one before it changed no content: it keeps the content
version. Each old version number then maps to the content version the item had at that revision.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping


def content_versions(revisions: Iterable[tuple[int, dict]]) -> dict[int, int]:
    """Revision number -> content version, from (number, snapshot) pairs of one item, in any order."""
    result: dict[int, int] = {}
    previous, current = None, 0
    for number, snapshot in sorted(revisions, key=lambda pair: pair[0]):
        if previous is None or snapshot != previous:
            current += 1
        result[number] = current
        previous = snapshot
    return result


def pinned(version: int, mapping: Mapping[int, int]) -> int:
    """The content version of an old item version: that of the latest revision at or before it (1 if none)."""
    if not mapping:
        return 1
    numbers = sorted(mapping)
    at = bisect_right(numbers, version)
    return mapping[numbers[at - 1]] if at else 1


def repin_unique(rows: list[tuple[int, tuple, int, int]]) -> dict[int, int]:
    """New versions for rows that must stay unique on (key, version): ``rows`` are (pk, key, old, new).

    Rows are moved to their new version unless two would meet; then the first row (lowest pk) moves and the
    others keep their old number, so no row is lost and the constraint holds. Returns pk -> version to write."""
    final = {pk: new for pk, _, _, new in rows}
    keys = {pk: key for pk, key, _, _ in rows}
    old = {pk: o for pk, _, o, _ in rows}
    while True:
        seen: dict[tuple, int] = {}
        clash = []
        for pk in sorted(final):
            slot = (keys[pk], final[pk])
            if slot in seen:
                clash.append(pk)
            else:
                seen[slot] = pk
        moved = [pk for pk in clash if final[pk] != old[pk]]
        if not moved:
            return {pk: v for pk, v in final.items() if v != old[pk]}
        for pk in moved:
            final[pk] = old[pk]


def repin_rows(apps, app_label: str, model_name: str) -> None:
    """Data-migration step: re-pin a model's ``item_version`` column (results, responses) from old item versions
    to content versions, read from the revisions' ``content_version`` (annotation migration 0008)."""
    ItemRevision = apps.get_model("annotation", "ItemRevision")
    Row = apps.get_model(app_label, model_name)
    mappings: dict[int, dict[int, int]] = {}
    for item_id, number, version in ItemRevision.objects.filter(item__version__gt=1).values_list(
            "item_id", "number", "content_version"):
        mappings.setdefault(item_id, {})[number] = version
    pairs = Row.objects.filter(item_id__in=list(mappings)).values_list("item_id", "item_version").distinct()
    for item_id, old in list(pairs):
        new = pinned(old, mappings[item_id])
        if new != old:
            Row.objects.filter(item_id=item_id, item_version=old).update(item_version=new)
