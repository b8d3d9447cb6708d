from django.core.management.base import BaseCommand, CommandError

from annotation.selectors import item_list
from annotation.services import items_export


class Command(BaseCommand):
    help = "Export items in the official DetectBench schema (JSONL) or as CSV."

    def add_arguments(self, parser):
        parser.add_argument("--split", help="Only this split")
        parser.add_argument("--source", help="Only this source")
        parser.add_argument("--status", help="Only items in this status, e.g. published")
        parser.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
        parser.add_argument("--out", help="Output file (default: standard output)")

    def handle(self, *args, split, source, status, format, out, **options):
        items = item_list(split=split, source=source, status=status).order_by("id").iterator(chunk_size=1000)
        if out:
            with open(out, "w", encoding="utf-8", newline="") as fh:
                count = items_export(items=items, out=fh, fmt=format)
            self.stderr.write(f"wrote {count} items to {out}")
        else:
            count = items_export(items=items, out=_Raw(self.stdout), fmt=format)
        if count == 0:
            raise CommandError("no items matched")


class _Raw:
    """Write to the command's stdout without the newline Django appends."""

    def __init__(self, wrapper):
        self.wrapper = wrapper

    def write(self, text: str) -> None:
        self.wrapper.write(text, ending="")
