"""`python manage.py import_all DIR` (or `--from DIR`): restore a backup of export_all into an empty database."""
from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from detectbench_web.backup import BackupError, import_all
from detectbench_web.backup.export import MANIFEST


class Command(BaseCommand):
    help = ("Restore a backup written by export_all into an empty, migrated database: every file is checked "
            "against the manifest first, then all rows are written in one transaction (or none).")

    def add_arguments(self, parser):
        parser.add_argument("folder", nargs="?", help="The backup directory")
        parser.add_argument("--from", dest="from_folder", help="The backup directory (instead of the argument)")

    def handle(self, *args, folder, from_folder, **options):
        if bool(folder) == bool(from_folder):
            raise CommandError("give the backup directory once: `import_all DIR` or `import_all --from DIR`")
        try:
            counts = import_all(folder=Path(folder or from_folder))
        except (BackupError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"restored {sum(counts.values())} rows in {len(counts)} tables from {folder or from_folder}")
        if not json.loads((Path(folder or from_folder) / MANIFEST).read_text(encoding="utf-8"))["password_hashes"]:
            self.stdout.write("the backup holds no password hashes: users log in again after "
                              "`manage.py changepassword USERNAME` (or a password reset)")
