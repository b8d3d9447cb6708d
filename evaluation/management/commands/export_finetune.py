"""`python manage.py export_finetune --split train --out FILE`: Detective Thinking Finetune data as chat JSONL."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Item
from evaluation.execution.planning import item_view
from evaluation.exports.finetune import finetune_record
from evaluation.prompting.prompts import present


class Command(BaseCommand):
    help = "Write Detective Thinking Finetune data (paper §4.2) as chat-format JSONL from the items' clue graphs."

    def add_arguments(self, parser):
        parser.add_argument("--split", default="train")
        parser.add_argument("--out", required=True, help="Output .jsonl file")
        parser.add_argument("--status", default="", help="Only items in this curation status, e.g. published")
        parser.add_argument("--permute-options", action="store_true", help="Shuffle options (seeded) so answers are not mostly 1")
        parser.add_argument("--seed", type=int, default=42)

    def handle(self, *args, split, out, status, permute_options, seed, **options):
        items = Item.objects.filter(split=split).exclude(evidence="").order_by("pk")
        if status:
            items = items.filter(status=status)
        if not items.exists():
            raise CommandError(f"no items with a clue graph in split {split!r}")
        count = 0
        with open(out, "w", encoding="utf-8") as handle:
            for item in items.iterator(chunk_size=500):
                shown = present(item_view(item), seed=seed, permute=permute_options)
                record = finetune_record(shown, evidence=item.evidence, reasoning=item.reasoning)
                record["id"] = item.external_id
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        self.stdout.write(f"wrote {count} chats to {out}")
