"""An item's content at a past content version, read from its revision snapshots.

A model result, a judge label and a participant's answer record the content version they saw
(``Item.content_version``); whatever grades or shows them beside their item reads the item's content at that
version here, never the item as it is now (like for like). The one reader for studies and evaluation alike.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from annotation.models import Item, ItemRevision
from annotation.models.items import CONTENT_FIELDS


def item_contents_at(pairs: Iterable[tuple[int, int | None]], *, fields: Sequence[str] = CONTENT_FIELDS,
                     current: Mapping[int, Item] | None = None) -> dict[tuple[int, int], dict]:
    """{(item id, content version): {field: value at that version}} for the pairs whose content is known; two
    queries at most for any number of pairs.

    A pair at the item's current version is the item as it is (also when no revision records that version, or the
    item was changed outside the services); the items come from ``current`` (already loaded, with ``fields``) or one
    query. Another version is the snapshot of the revision with the highest number at that content version (the
    latest at that version). A pair whose version is None or that no revision records is left out: its content is
    unknown, and the caller says so rather than show another version's. A field missing from a snapshot is None."""
    wanted = {(item_id, version) for item_id, version in pairs if version is not None}
    if not wanted:
        return {}
    items = dict(current or {})
    unloaded = {item_id for item_id, _ in wanted} - items.keys()
    if unloaded:
        items.update((item.pk, item) for item in
                     Item.objects.filter(pk__in=unloaded).only("id", "content_version", *fields))
    found = {(item_id, version): {name: getattr(items[item_id], name) for name in fields}
             for item_id, version in wanted if item_id in items and items[item_id].content_version == version}
    older = wanted - found.keys()
    if older:
        revisions = (ItemRevision.objects.filter(item_id__in={item_id for item_id, _ in older},
                                                 content_version__in={version for _, version in older})
                     .order_by("item_id", "content_version", "-number")
                     .values_list("item_id", "content_version", "snapshot"))
        for item_id, version, snapshot in revisions:
            if (item_id, version) in older and (item_id, version) not in found:  # the first is the latest
                found[(item_id, version)] = {name: (snapshot or {}).get(name) for name in fields}
    return found


def judged_now_first(label_version: int, version_now: int | None, order: int) -> tuple[bool, int]:
    """The rank of one of a target's labels, the highest first: a label of the content its item has now
    (``version_now``) before any other, then the latest judged (``order``: its id). Content version numbers name
    contents, not their order: after a revert, a higher one is an older content."""
    return label_version == version_now, order
