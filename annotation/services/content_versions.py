"""Content versions name contents: an item's content version changes with its content, and a content the item
had before takes that content's version again.

A revert, a re-import of the file an edit was made over, an edit undone by hand: the item's content is again one
it had, so it gets that content's version back, not a new one. The rows that recorded the version they saw (model
results, participants' responses, judge labels) are then current again, as they are: their content is the item's.
A content the item never had gets a version above every one it had.

So one version is one content (as it always was), and one content of an item is one version, for every change
made under this rule. An item reverted before it kept the new version it was given then: its rows at the earlier
version stay stale, which is conservative (never a row counted current on content it did not see).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from django.core.serializers.json import DjangoJSONEncoder

from annotation.models import CONTENT_FIELDS, Item, ItemRevision


def content_key(content: Mapping) -> str:
    """A content as comparable text: the content fields, as a revision snapshot stores them (JSON)."""
    return json.dumps({name: content.get(name) for name in CONTENT_FIELDS}, sort_keys=True, ensure_ascii=False,
                      cls=DjangoJSONEncoder)


def assign_content_versions(items: Sequence[Item]) -> None:
    """Give each of `items` (its new content set, not yet saved) the content version of that content: the version of
    the item's revision with that very content (the highest, if two have it), else one above every content version
    the item has had (its revisions, `highest_content_version` and the version its row holds, whatever wrote it);
    `highest_content_version` follows. One query, for any number of items (the caller holds their rows' locks)."""
    seen: dict[int, dict[str, int]] = {item.pk: {} for item in items}
    highest = {item.pk: max(item.highest_content_version, item.content_version) for item in items}
    revisions = (ItemRevision.objects.filter(item_id__in=list(seen))
                 .values_list("item_id", "content_version", "snapshot").iterator(chunk_size=500))
    for item_id, version, snapshot in revisions:
        key = content_key(snapshot or {})
        seen[item_id][key] = max(version, seen[item_id].get(key, 0))
        highest[item_id] = max(highest[item_id], version)
    for item in items:
        item.content_version = seen[item.pk].get(content_key(item.content()), highest[item.pk] + 1)
        item.highest_content_version = max(highest[item.pk], item.content_version)
