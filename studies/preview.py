"""Reads for a researcher's preview of a study (studies/views/preview.py): which items it shows, and each item.

Reads only: a preview takes no place, hands out no lease and changes no item's load.
"""
from __future__ import annotations

from annotation.models import Item
from studies.allocation import presentation_order
from studies.models import Study, StudyItem


def preview_items(study: Study) -> list[int]:
    """The items a preview shows: as many as a participant gets, from the pool in a seeded order of its own."""
    ids = list(StudyItem.objects.filter(study=study).values_list("item_id", flat=True))
    return presentation_order(ids, seed=f"preview:{study.seed}")[:study.per_participant]


def preview_item(item_id: int) -> Item:
    """An item as the preview shows and scores it."""
    return Item.objects.only("id", "context", "question", "options", "translations", "answer_index").get(pk=item_id)
