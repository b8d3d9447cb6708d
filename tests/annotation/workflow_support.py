"""Helpers shared by the annotation workflow tests."""
from __future__ import annotations

import json

from annotation.models import Item, ItemStatus, StageConfig
from tests.support.items import import_text

CONTEXT = ("On a snowy winter night the butler found the study door locked from inside. "
           "The window was open and muddy boots stood by the desk. The gardener had a key to the study.")


def record(i: int, **over) -> dict:
    r = {
        "id": i,
        "context": CONTEXT,
        "question": f"Who entered the study? ({i})",
        "options": ["The gardener", "The butler", "The cook", "Nobody"],
        "answer": 0,
        "clue_graph": {
            "evidence": "muddy boots stood by the desk -> someone came in from the garden\n"
                        "The gardener had a key to the study -> the gardener could lock the door\n"
                        "the night was blustery and snowy -> tracks would show",
            "multi_hop_reasoning": "After correlating the clues we get:\n"
                                   "someone came in from the garden + the gardener could lock the door -> The gardener",
        },
    }
    r.update(over)
    return r


def make_items(n: int, *, status: str = ItemStatus.VERIFICATION, source: str = "t", start: int = 1) -> list[Item]:
    text = "\n".join(json.dumps(record(i)) for i in range(start, start + n)) + "\n"
    import_text(text, file_name="t.jsonl", source=source, split="test")
    items = Item.objects.filter(source=source, external_id__in=[str(i) for i in range(start, start + n)])
    items.update(status=status)
    return list(items.order_by("pk"))


def set_k(stage: str, k: int, lease_minutes: int = 30) -> None:
    StageConfig.objects.update_or_create(stage=stage, defaults={"annotators_required": k,
                                                                "lease_minutes": lease_minutes})
