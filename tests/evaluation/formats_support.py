"""Shared by the tests of what the tables count: the answer formats a run can have, and the real test split's first
items."""
from __future__ import annotations

from annotation.models import Item
from tests.support.items import import_items

#: (built-in model, method, option order): multiple choice in the original and the circular order, and free text.
FORMATS = (("first-option", "naive", "original"), ("lexical", "naive", "original"),
           ("random", "self-cot", "circular"), ("lexical", "free-text", "original"))


def split_item_ids(detectbench_dir, *, limit: int) -> list[int]:
    """The first ``limit`` items of the real test split, imported; their ids in order."""
    import_items(detectbench_dir / "test.jsonl", split="test", limit=limit)
    return list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))
