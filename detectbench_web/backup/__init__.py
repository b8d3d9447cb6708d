"""Backups: every table of curation, studies and evaluation (and the users they point at) as JSONL.

`export_all(out=DIR)` writes one file per table, rows in primary-key order, and a manifest with
each file's row count and SHA-256 and the schema (migration) state; `import_all(folder=DIR)`
restores them into an empty database in one transaction. This module may import every app;
the commands `manage.py export_all` / `import_all` live in evaluation (the app that may read all).
"""
from detectbench_web.backup.export import BackupError, export_all
from detectbench_web.backup.restore import import_all
from detectbench_web.backup.tables import EXCLUDED, backed_up_models

__all__ = ["BackupError", "EXCLUDED", "backed_up_models", "export_all", "import_all"]
