"""`export_all`: every backed-up table as JSONL (one file per table, rows by primary key) plus manifest.json."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from detectbench_web.backup import tables

FORMAT = "detectbench-backup/1"
MANIFEST = "manifest.json"
#: Lines per block hash: a changed line is reported within such a block.
BLOCK_LINES = 100
CHUNK_ROWS = 2000


class BackupError(Exception):
    """A backup cannot be written or read; the message says where (file, line, field)."""


@dataclass
class TableFile:
    model: str
    file: str
    rows: int
    sha256: str
    blocks: list[str]
    fields: list[str]

    def as_dict(self) -> dict:
        return {"model": self.model, "file": self.file, "rows": self.rows, "sha256": self.sha256,
                "fields": self.fields, "block_lines": BLOCK_LINES, "block_sha256": self.blocks}


def unapplied_migrations() -> list[str]:
    """The code's migrations that this database has not applied (a backup of such a database is refused)."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def applied_migrations() -> dict[str, list[str]]:
    """The schema state: the migrations applied in this database, per app."""
    state: dict[str, list[str]] = {}
    for app, name in sorted(MigrationRecorder(connection).applied_migrations()):
        state.setdefault(app, []).append(name)
    return state


class _Hasher:
    """SHA-256 of a file and of each block of BLOCK_LINES lines, fed line by line."""

    def __init__(self):
        self.whole, self.block, self.blocks, self.lines = hashlib.sha256(), hashlib.sha256(), [], 0

    def add(self, line: bytes) -> None:
        self.whole.update(line)
        self.block.update(line)
        self.lines += 1
        if self.lines % BLOCK_LINES == 0:
            self.blocks.append(self.block.hexdigest())
            self.block = hashlib.sha256()

    def finish(self) -> tuple[str, list[str]]:
        if self.lines % BLOCK_LINES:
            self.blocks.append(self.block.hexdigest())
        return self.whole.hexdigest(), self.blocks


def _write_table(model, path: Path, *, with_passwords: bool) -> TableFile:
    fields = tables.columns(model, with_passwords=with_passwords)
    names = [f.attname for f in fields]
    by_natural_key = {f.attname: tables.natural_keys(f.related_model) for f in fields if tables.keyed_by_natural_key(f)}
    hasher = _Hasher()
    with open(path, "wb") as out:
        rows = model._base_manager.order_by("pk").values_list(*names).iterator(chunk_size=CHUNK_ROWS)
        for values in rows:
            row = {}
            for name, value in zip(names, values):
                if name in by_natural_key and value is not None:
                    value = by_natural_key[name][value]
                row[name] = tables.encode_value(value)
            line = tables.dump_line(row)
            out.write(line)
            hasher.add(line)
    digest, blocks = hasher.finish()
    return TableFile(model._meta.label_lower, path.name, hasher.lines, digest, blocks, names)


def export_all(*, out: Path, with_passwords: bool = False) -> dict:
    """Write the backup into the directory `out` (created; refused if it holds files); returns the manifest.

    One consistent snapshot (a read-only repeatable-read transaction on PostgreSQL), so a backup
    taken while people work is still whole. The manifest is written last: a directory without
    one is an unfinished backup and `import_all` refuses it.
    """
    models = tables.backed_up_models()
    pending = unapplied_migrations()
    if pending:
        raise BackupError(f"the database lacks migrations of this code ({', '.join(pending[:5])}): "
                          "run `manage.py migrate` first")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BackupError(f"{out}: not an empty directory; give a new one (a backup never overwrites another)")
    out.mkdir(parents=True, exist_ok=True)
    outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not outer:  # inside a caller's transaction: its snapshot
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        files = [_write_table(model, out / tables.file_name(model), with_passwords=with_passwords)
                 for model in models]
        manifest = {
            "format": FORMAT,
            "password_hashes": with_passwords,
            "migrations": applied_migrations(),
            "excluded": dict(sorted(tables.EXCLUDED.items())),
            "tables": [f.as_dict() for f in files],
        }
    partial = out / (MANIFEST + ".partial")
    partial.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, out / MANIFEST)
    return manifest
