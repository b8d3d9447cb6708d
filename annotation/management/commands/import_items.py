from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ImportRejected
from annotation.services import item_import


class Command(BaseCommand):
    help = "Import items from an official DetectBench JSONL file (all or nothing, idempotent upsert)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to a DetectBench .jsonl file")
        parser.add_argument("--source", default="detectbench-v1.3", help="Source name; (source, id) is unique")
        parser.add_argument("--split", required=True, help="Split name, e.g. train, dev, test")
        parser.add_argument("--dry-run", action="store_true", help="Validate and report, write nothing")
        parser.add_argument("--skip-invalid", action="store_true", help="Import the valid lines, list the bad ones")

    def handle(self, *args, file, source, split, dry_run, skip_invalid, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            with path.open("rb") as stream:
                report = item_import(stream=stream, file_name=str(file), source=source, split=split,
                                     dry_run=dry_run, skip_invalid=skip_invalid)
        except ImportRejected as exc:
            raise CommandError(str(exc)) from exc
        for error in report.errors:
            self.stderr.write(f"skipped {error}")
        self.stdout.write(f"{file}: {report.summary()}")
