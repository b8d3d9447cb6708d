"""`import_all`: a backup back into an empty, migrated database, all or nothing.

First every file is checked against the manifest without writing anything: each line is a JSON
object with the table's fields and a growing primary key, the row count and the SHA-256 (of the
file and of each block of lines) match. Then, in one transaction: the database must hold no data
(the rows migrations create are replaced), every row is inserted with its primary key, and the
PostgreSQL sequences are moved past the restored keys.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.contrib.auth.hashers import make_password
from django.core.management.color import no_style
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction

from detectbench_web.backup import tables
from detectbench_web.backup.export import FORMAT, MANIFEST, BackupError, applied_migrations

INSERT_BATCH = 2000


def _read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file():
        raise BackupError(f"{path}: no manifest (not a backup, or an unfinished one)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackupError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{path}: format {manifest.get('format') if isinstance(manifest, dict) else None!r}, "
                          f"expected {FORMAT!r}")
    return manifest


def _check_entries(manifest: dict) -> None:
    """The manifest's shape: a list of tables, each naming its own file (never a path) and its counts."""
    migrations = manifest.get("migrations")
    if not isinstance(migrations, dict) or not all(isinstance(v, list) for v in migrations.values()):
        raise BackupError(f"{MANIFEST}: migrations: expected the applied migrations per app")
    entries = manifest.get("tables")
    if not isinstance(entries, list):
        raise BackupError(f"{MANIFEST}: tables: expected a list of tables")
    for index, entry in enumerate(entries):
        keys = ("model", "file", "rows", "sha256", "fields")
        if not isinstance(entry, dict) or any(key not in entry for key in keys):
            raise BackupError(f"{MANIFEST}: tables[{index}]: needs {', '.join(keys)}")
        if entry["file"] != f"{entry['model']}.jsonl":
            raise BackupError(f"{MANIFEST}: tables[{index}]: file {entry['file']!r} is not {entry['model']}.jsonl")


def _check_schema(manifest: dict, models) -> None:
    _check_entries(manifest)
    here, there = applied_migrations(), manifest["migrations"]
    pairs = lambda state: {(app, name) for app, names in state.items() for name in names}  # noqa: E731
    missing, extra = sorted(pairs(there) - pairs(here)), sorted(pairs(here) - pairs(there))
    if missing or extra:
        detail = "; ".join(filter(None, [
            missing and "not applied here: " + ", ".join(f"{a}.{n}" for a, n in missing[:8]),
            extra and "applied here, not in the backup: " + ", ".join(f"{a}.{n}" for a, n in extra[:8])]))
        raise BackupError(f"{MANIFEST}: the backup's schema differs from this database's ({detail}); "
                          "migrate this database to the backup's migrations first")
    listed = [t["model"] for t in manifest["tables"]]
    expected = [m._meta.label_lower for m in models]
    if sorted(listed) != sorted(expected):
        raise BackupError(f"{MANIFEST}: tables {sorted(set(listed) ^ set(expected))} are in only one of the backup "
                          "and this code")


def _expected_fields(model, with_passwords: bool) -> list[str]:
    return [f.attname for f in tables.columns(model, with_passwords=with_passwords)]


def _verify_file(folder: Path, entry: dict, model, with_passwords: bool) -> None:
    """Refuse a file that is not exactly what the manifest describes, naming the file and line."""
    name = entry["file"]
    path = folder / name
    fields = _expected_fields(model, with_passwords)
    if entry.get("fields") != fields:
        raise BackupError(f"{name}: fields {entry.get('fields')} in the manifest, this code has {fields}")
    if not path.is_file():
        raise BackupError(f"{name}: missing from the backup")
    whole, block, line_no, last_pk = hashlib.sha256(), hashlib.sha256(), 0, None
    blocks, block_lines = entry.get("block_sha256") or [], entry.get("block_lines") or 1
    with open(path, "rb") as handle:
        for line in handle:
            line_no += 1
            where = f"{name}:{line_no}"
            if not line.endswith(b"\n"):
                raise BackupError(f"{where}: the line is cut short (no end of line): the file is truncated")
            try:
                row = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise BackupError(f"{where}: not a JSON line ({exc.__class__.__name__}: {exc})") from None
            if not isinstance(row, dict) or sorted(row) != sorted(fields):
                got = sorted(row) if isinstance(row, dict) else type(row).__name__
                raise BackupError(f"{where}: expected the fields {sorted(fields)}, found {got}")
            pk = row[model._meta.pk.attname]
            if last_pk is not None and not _after(pk, last_pk):
                raise BackupError(f"{where}: {model._meta.pk.attname}: {pk!r} is not after {last_pk!r} "
                                  "(rows are in primary-key order)")
            last_pk = pk
            whole.update(line)
            block.update(line)
            if line_no % block_lines == 0:
                _check_block(name, line_no, block_lines, block.hexdigest(), blocks)
                block = hashlib.sha256()
    if line_no != entry.get("rows"):
        raise BackupError(f"{name}:{line_no}: the file ends after {line_no} rows, the manifest says "
                          f"{entry.get('rows')} (truncated or added to)")
    if line_no % block_lines:
        _check_block(name, line_no, block_lines, block.hexdigest(), blocks)
    if whole.hexdigest() != entry.get("sha256"):
        raise BackupError(f"{name}: its SHA-256 is not the manifest's (the file was changed after export)")


def _after(pk, last) -> bool:
    try:
        return pk > last
    except TypeError:
        return False


def _check_block(name: str, line_no: int, size: int, digest: str, blocks: list[str]) -> None:
    index = (line_no - 1) // size
    if index >= len(blocks) or blocks[index] != digest:
        first = index * size + 1
        raise BackupError(f"{name}:{first}-{line_no}: a line here differs from the exported one "
                          "(the checksum of these lines is not the manifest's)")


def _refuse_if_not_empty(models) -> None:
    seeded = set(tables.SEEDED)
    filled = [(m._meta.label_lower, m._base_manager.count()) for m in models
              if m._meta.label_lower not in seeded and m._base_manager.exists()]
    if filled:
        listing = ", ".join(f"{label} ({n} rows)" for label, n in filled[:10])
        raise BackupError("the database is not empty: " + listing + ". import_all restores only into an empty, "
                          "migrated database (create a new one and run `manage.py migrate`)")


#: Column types whose JSON value is already what the database takes (after the field's to_python).
PLAIN_TYPES = {"AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField", "SmallIntegerField",
               "PositiveIntegerField", "PositiveSmallIntegerField", "PositiveBigIntegerField", "CharField",
               "TextField", "SlugField", "EmailField", "URLField", "BooleanField", "FloatField"}


def _converter(field, db):
    """JSON value -> the value to store in `field`'s column."""
    if tables.keyed_by_natural_key(field):
        pks = {tuple(k): pk for pk, k in tables.natural_keys(field.related_model).items()}

        def by_natural_key(value):
            if tuple(value) not in pks:
                raise ValueError(f"{value} does not exist in this database")
            return pks[tuple(value)]
        return by_natural_key
    kind = (field.target_field if field.is_relation else field).get_internal_type()
    if kind in PLAIN_TYPES:
        return field.to_python
    return lambda value: field.get_db_prep_save(tables.decode_value(field, value), db)


def _insert_table(folder: Path, entry: dict, model, with_passwords: bool) -> int:
    db = connections[DEFAULT_DB_ALIAS]  # the connection itself: the proxy costs a lookup per value
    fields = tables.columns(model, with_passwords=with_passwords)
    converters = [(field.attname, _converter(field, db)) for field in fields]
    all_columns = list(fields)
    password = None
    if not with_passwords and model._meta.label_lower == tables.PASSWORD_FIELD[0]:
        password = model._meta.get_field(tables.PASSWORD_FIELD[1])
        all_columns.append(password)
    quote = db.ops.quote_name
    table, names = quote(model._meta.db_table), ", ".join(quote(f.column) for f in all_columns)
    write = (_copier(f"COPY {table} ({names}) FROM STDIN") if db.vendor == "postgresql"
             else _inserter(f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(all_columns))})"))
    name, batch, first, count, digest = entry["file"], [], 1, 0, hashlib.sha256()
    with open(folder / name, "rb") as handle, db.cursor() as cursor:
        for line_no, line in enumerate(handle, start=1):
            digest.update(line)
            row = json.loads(line)
            values = []
            for attname, convert in converters:
                value = row[attname]
                try:
                    values.append(None if value is None else convert(value))
                except Exception as exc:  # ValueError, TypeError, Django's ValidationError from to_python
                    raise BackupError(f"{name}:{line_no}: {attname}: {exc}") from None
            if password is not None:
                values.append(make_password(None))  # no hash in the backup: an unusable password
            batch.append(values)
            count += 1
            if len(batch) >= INSERT_BATCH:
                _flush(db, cursor, write, batch, f"{name}:{first}-{line_no}")
                first, batch = line_no + 1, []
        if batch:
            _flush(db, cursor, write, batch, f"{name}:{first}-{first + len(batch) - 1}")
    if digest.hexdigest() != entry["sha256"]:  # changed since it was checked: the transaction is rolled back
        raise BackupError(f"{name}: the file changed while it was restored")
    return count


def _copier(sql: str):
    def write(cursor, rows) -> None:
        with cursor.cursor.copy(sql) as copy:  # psycopg's COPY: the fastest way in
            for row in rows:
                copy.write_row(row)
    return write


def _inserter(sql: str):
    def write(cursor, rows) -> None:
        cursor.executemany(sql, rows)
    return write


def _flush(db, cursor, write, rows: list, where: str) -> None:
    try:
        with transaction.atomic(savepoint=True), db.wrap_database_errors:
            write(cursor, rows)
    except DatabaseError as exc:
        raise BackupError(f"{where}: the database refused a row: {str(exc).strip()}") from None


def import_all(*, folder: Path) -> dict[str, int]:
    """Restore the backup in `folder`; returns rows per table. Nothing is written unless all of it is."""
    folder = Path(folder)
    manifest = _read_manifest(folder)
    models = tables.backed_up_models()
    by_label = {m._meta.label_lower: m for m in models}
    _check_schema(manifest, models)
    with_passwords = bool(manifest.get("password_hashes"))
    entries = manifest["tables"]
    for entry in entries:
        _verify_file(folder, entry, by_label[entry["model"]], with_passwords)
    counts = {}
    with transaction.atomic():
        if connection.vendor == "postgresql":  # nobody writes beside the restore (reads may go on)
            with connection.cursor() as cursor:
                quote = connection.ops.quote_name
                cursor.execute(f"LOCK TABLE {', '.join(quote(m._meta.db_table) for m in models)} IN EXCLUSIVE MODE")
        _refuse_if_not_empty(models)
        for label in reversed([m._meta.label_lower for m in models]):
            if label in tables.SEEDED:
                by_label[label]._base_manager.all().delete()
        order = {m._meta.label_lower: i for i, m in enumerate(models)}
        for entry in sorted(entries, key=lambda e: order[e["model"]]):
            counts[entry["model"]] = _insert_table(folder, entry, by_label[entry["model"]], with_passwords)
        with connection.cursor() as cursor:
            for statement in connection.ops.sequence_reset_sql(no_style(), models):
                cursor.execute(statement)
            if connection.vendor == "postgresql":
                try:
                    with transaction.atomic(savepoint=True):
                        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                except DatabaseError as exc:
                    raise BackupError(f"the backup's rows do not fit together: {str(exc).strip()}") from None
    return counts
