"""An item's content at a content version: the answer key and the clue graph as the participants of that version saw
them (the item itself for its current version, else its last revision at that version). Like for like: an answer is
compared with the key of the version it was given on, never with a later one."""
from __future__ import annotations

from collections.abc import Iterable

from annotation.models import Item, ItemRevision

#: The content a reader of studies compares answers with (the shown texts are not needed).
KEY_FIELDS = ("answer_index", "evidence", "translations")


def contents_at(pairs: Iterable[tuple[int, int | None]]) -> dict[tuple[int, int], dict]:
    """(item id, content version) -> {answer_index, evidence, translations} at that version; two queries at most. A
    pair whose version has no revision (nor is current) is left out: its key is unknown, not the current one."""
    wanted = {(item_id, version) for item_id, version in pairs if version is not None}
    if not wanted:
        return {}
    out: dict[tuple[int, int], dict] = {}
    items = Item.objects.filter(pk__in={item_id for item_id, _ in wanted}).only("id", "content_version", *KEY_FIELDS)
    for item in items:
        if (item.pk, item.content_version) in wanted:
            out[(item.pk, item.content_version)] = {name: getattr(item, name) for name in KEY_FIELDS}
    older = wanted - set(out)
    if older:
        revisions = (ItemRevision.objects.filter(item_id__in={i for i, _ in older},
                                                 content_version__in={v for _, v in older})
                     .order_by("item_id", "content_version", "-number").values_list("item_id", "content_version",
                                                                                   "snapshot"))
        for item_id, version, snapshot in revisions:
            if (item_id, version) in older and (item_id, version) not in out:  # the last revision at that version
                out[(item_id, version)] = {name: (snapshot or {}).get(name) for name in KEY_FIELDS}
    return out
