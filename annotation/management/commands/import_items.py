from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import CuratedConflicts, ImportRejected
from annotation.services import item_import
from annotation.services.items import CURATED_KEEP, CURATED_OVERWRITE, CURATED_REFUSE
from foundation.errors import Invalid


class Command(BaseCommand):
    help = "Import items from an official DetectBench JSONL file (all or nothing, idempotent upsert)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to a DetectBench .jsonl file")
        parser.add_argument("--source", default="detectbench-v1.3", help="Source name; (source, id) is unique")
        parser.add_argument("--split", required=True, help="Split name, e.g. train, dev, test")
        parser.add_argument("--dry-run", action="store_true", help="Validate and report, write nothing")
        parser.add_argument("--skip-invalid", action="store_true", help="Import the valid lines, list the bad ones")
        curated = parser.add_mutually_exclusive_group()
        curated.add_argument("--keep-curated", action="store_true",
                             help="Leave items edited in the app since their last import as they are; import the rest")
        curated.add_argument("--overwrite-curated", action="store_true",
                             help="Overwrite items edited in the app (a new revision that records what it replaced)")

    def handle(self, *args, file, source, split, dry_run, skip_invalid, keep_curated=False, overwrite_curated=False,
               **options):
        curated = CURATED_KEEP if keep_curated else CURATED_OVERWRITE if overwrite_curated else CURATED_REFUSE
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            with path.open("rb") as stream:
                report = item_import(stream=stream, file_name=str(file), source=source, split=split,
                                     dry_run=dry_run, skip_invalid=skip_invalid, curated=curated)
        except (ImportRejected, CuratedConflicts) as exc:
            raise CommandError(str(exc)) from exc
        except Invalid as exc:  # an option the items cannot hold, e.g. a --source longer than its column
            why = " ".join(exc.errors.get(exc.field, [])) or exc.message
            raise CommandError(f"--{exc.field}: {why}" if exc.field else why) from exc
        for error in report.errors:
            self.stderr.write(f"skipped {error}")
        self.stdout.write(f"{file}: {report.summary()}")
