"""`python manage.py export_all --out DIR`: every table as JSONL plus manifest.json (detectbench_web.backup)."""
from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from detectbench_web.backup import BackupError, export_all


class Command(BaseCommand):
    help = ("Back up items, revisions, curation records, belief labels and reviews, studies with every attempt "
            "and answer, endpoints (key variable names only), runs with every result, judge configs and runs, "
            "and users with their groups: one JSONL file per table and a manifest with counts and SHA-256.")

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="A new (or empty) directory for the backup")
        parser.add_argument("--with-password-hashes", action="store_true",
                            help="Also write users' password hashes, so that logins work after a restore "
                                 "(keep such a backup as secret as the database)")

    def handle(self, *args, out, with_password_hashes, **options):
        try:
            manifest = export_all(out=Path(out), with_passwords=with_password_hashes)
        except (BackupError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from None
        rows = sum(t["rows"] for t in manifest["tables"])
        self.stdout.write(f"wrote {rows} rows in {len(manifest['tables'])} tables to {out}")
