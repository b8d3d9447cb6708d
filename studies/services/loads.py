"""The one way a study item's load changes outside the hand-out statement: by a count per item, one UPDATE per distinct
count (a dropout's fifteen items, each by one, are one statement). The caller holds the study's row, as every change
of a load does."""
from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import F

from studies.models import StudyItem


def loads_change(per_item: Counter, *, sign: int, released_at: datetime | None = None) -> None:
    """Add ``sign`` x count to each study item's load (``per_item``: study item id -> count); a release (sign -1)
    stamps ``released_at``, so that the next starts take those items first."""
    by_count: dict[int, list[int]] = {}
    for study_item_id, count in per_item.items():
        if count:
            by_count.setdefault(count, []).append(study_item_id)
    extra = {"released_at": released_at} if released_at is not None else {}
    for count, ids in by_count.items():
        StudyItem.objects.filter(pk__in=ids).update(load=F("load") + sign * count, **extra)
