"""Backups: export_all -> a freshly migrated PostgreSQL database -> import_all -> export_all is byte-identical,
with data in every backed-up table; broken, truncated or foreign backups and non-empty databases are refused
with the file and line, and nothing is half-written."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection

from annotation.models import Item
from detectbench_web.backup import EXCLUDED, BackupError, backed_up_models, export_all, import_all
from detectbench_web.backup.export import BLOCK_LINES
from tests.backup.data import API_KEY_ENV, API_KEY_VALUE, ITEMS, build_everything
from tests.conftest import REPO_DIR, database_url_for_subprocess, subprocess_env


def _server() -> str:
    """The PostgreSQL server of the test database (DATABASE_URL), without a database name."""
    url = database_url_for_subprocess()
    return url.rsplit("/", 1)[0]


@dataclass
class Backup:
    folder: Path
    counts: dict[str, int]
    target: str  # a new database, migrated by `manage.py migrate` while the data was made
    migrate: subprocess.Popen


def _admin(sql: str) -> None:
    with psycopg.connect(f"{_server()}/postgres", autocommit=True) as admin:
        admin.execute(sql)


def _manage(*args: str, database: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_DIR, capture_output=True, text=True,
                          env=subprocess_env(DATABASE_URL=f"{_server()}/{database}"), timeout=300)


@pytest.fixture(scope="module")
def backup(django_db_setup, django_db_blocker, detectbench_dir, tmp_path_factory):
    """Data in every table (committed), exported once; then this test database is emptied (as a transactional
    test leaves it), so tests may also import into it. A fresh database is migrated meanwhile."""
    target = connection.settings_dict["NAME"] + "_restore"
    _admin(f'DROP DATABASE IF EXISTS "{target}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{target}"')
    migrate = subprocess.Popen([sys.executable, "manage.py", "migrate", "--no-input", "-v0", "--skip-checks"],
                               cwd=REPO_DIR, env=subprocess_env(DATABASE_URL=f"{_server()}/{target}"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    folder = tmp_path_factory.mktemp("backup") / "a"
    os.environ[API_KEY_ENV] = API_KEY_VALUE
    try:
        with django_db_blocker.unblock():
            try:
                counts = build_everything(detectbench_dir)
                call_command("export_all", out=str(folder))
            finally:
                call_command("flush", interactive=False, verbosity=0)
        yield Backup(folder, counts, target, migrate)
    finally:
        os.environ.pop(API_KEY_ENV, None)
        if migrate.poll() is None:
            migrate.kill()
        migrate.wait()
        _admin(f'DROP DATABASE IF EXISTS "{target}" WITH (FORCE)')


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def _copy(backup: Backup, tmp_path: Path) -> Path:
    return Path(shutil.copytree(backup.folder, tmp_path / "copy"))


def _rewrite(folder: Path, name: str, lines: list[bytes]) -> None:
    """Write `lines` into `name` and make the manifest agree (a backup that passes every checksum)."""
    data = b"".join(lines)
    (folder / name).write_bytes(data)
    manifest = _manifest(folder)
    entry = next(t for t in manifest["tables"] if t["file"] == name)
    entry.update(rows=len(lines), sha256=hashlib.sha256(data).hexdigest(),
                 block_sha256=[hashlib.sha256(b"".join(lines[i:i + BLOCK_LINES])).hexdigest()
                               for i in range(0, len(lines), BLOCK_LINES)])
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _lines(folder: Path, name: str) -> list[bytes]:
    return (folder / name).read_bytes().splitlines(keepends=True)


def test_every_model_is_backed_up_or_excluded_with_a_reason():
    backed_up = {m._meta.label_lower for m in backed_up_models()}
    every = {m._meta.label_lower for m in apps.get_models(include_auto_created=True) if not m._meta.proxy}
    assert every == backed_up | set(EXCLUDED) and not backed_up & set(EXCLUDED)
    assert all(len(reason) > 20 for reason in EXCLUDED.values())
    for app in ("annotation", "studies", "evaluation"):  # the apps' own tables: none left out but the cache
        left_out = {m._meta.label_lower for m in apps.get_app_config(app).get_models()} - backed_up
        assert left_out <= {"evaluation.cachedresponse"}, left_out
    assert {"auth.user", "auth.group", "auth.user_groups", "evaluation.judgerun", "annotation.beliefreview",
            "studies.response", "studies.refusedanswer", "evaluation.result"} <= backed_up


def test_a_model_of_an_unknown_app_without_a_decision_stops_the_backup():
    from django.core.exceptions import ImproperlyConfigured

    without_sessions = {label: why for label, why in EXCLUDED.items() if label != "sessions.session"}
    with pytest.raises(ImproperlyConfigured, match="no decision for sessions.session"):
        backed_up_models(excluded=without_sessions)
    with pytest.raises(ImproperlyConfigured, match="no longer exist: annotation.gone"):
        backed_up_models(excluded={**EXCLUDED, "annotation.gone": "renamed"})


def test_the_backup_holds_every_table_with_rows_counts_and_checksums(backup):
    manifest = _manifest(backup.folder)
    tables_ = {t["model"]: t for t in manifest["tables"]}
    assert list(tables_) == [m._meta.label_lower for m in backed_up_models()]
    empty = [label for label, n in backup.counts.items() if n == 0]
    assert not empty, f"the test data leaves these tables empty (add rows in tests/backup/data.py): {empty}"
    for label, entry in tables_.items():
        data = (backup.folder / entry["file"]).read_bytes()
        assert entry["rows"] == backup.counts[label] == data.count(b"\n"), label
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        pks = [json.loads(line)["id"] for line in data.splitlines()]
        assert pks == sorted(pks), f"{label}: not in primary-key order"
    assert manifest["migrations"]["annotation"][0] == "0001_initial"
    assert manifest["password_hashes"] is False
    assert tables_["annotation.item"]["rows"] == ITEMS


def test_the_backup_holds_key_variable_names_never_keys_nor_password_hashes(backup):
    everything = b"".join(_files(backup.folder).values())
    assert API_KEY_VALUE.encode() not in everything
    endpoints = [json.loads(line) for line in _lines(backup.folder, "evaluation.modelendpoint.jsonl")]
    assert [e["api_key_env"] for e in endpoints if e["name"] == "remote-model"] == [API_KEY_ENV]
    users = [json.loads(line) for line in _lines(backup.folder, "auth.user.jsonl")]
    assert [u["username"] for u in users] == ["ann1", "ann2", "res1"] and not any("password" in u for u in users)
    assert b"md5$" not in everything and b"pbkdf2" not in everything
    permissions = [json.loads(line) for line in _lines(backup.folder, "auth.user_user_permissions.jsonl")]
    assert permissions[0]["permission_id"] == ["view_item", "annotation", "item"]  # by natural key, not by id


def _counts_in(database: str) -> dict[str, int]:
    with psycopg.connect(f"{_server()}/{database}") as conn:
        return {m._meta.label_lower: conn.execute(f'SELECT count(*) FROM "{m._meta.db_table}"').fetchone()[0]
                for m in backed_up_models()}


def test_round_trip_through_a_freshly_migrated_database_is_byte_identical(backup, tmp_path):
    started = time.monotonic()
    assert backup.migrate.wait(timeout=300) == 0, backup.migrate.stdout.read()
    waited = time.monotonic() - started
    assert not any(_counts_in(backup.target)[label] for label in ("annotation.item", "auth.user", "studies.study"))
    started = time.monotonic()
    restored = _manage("import_all", "--from", str(backup.folder), "--skip-checks", database=backup.target)
    import_s = time.monotonic() - started
    assert restored.returncode == 0, restored.stderr
    assert f"restored {sum(backup.counts.values())} rows" in restored.stdout
    assert _counts_in(backup.target) == backup.counts
    again = tmp_path / "b"
    started = time.monotonic()
    exported = _manage("export_all", "--out", str(again), "--skip-checks", database=backup.target)
    export_s = time.monotonic() - started
    assert exported.returncode == 0, exported.stderr
    print(f"\nbackup round trip: {sum(backup.counts.values())} rows in {len(backup.counts)} tables; waited "
          f"{waited:.1f} s more for migrate; import_all {import_s:.1f} s, export_all {export_s:.1f} s (commands, "
          "with start-up)")
    first, second = _files(backup.folder), _files(again)
    assert list(first) == list(second)
    different = [name for name in first if first[name] != second[name]]
    assert not different, f"not byte-identical: {different}"

    with psycopg.connect(f"{_server()}/{backup.target}") as conn:
        for model in backed_up_models():  # sequences past the restored keys: the next row gets a new key
            table = model._meta.db_table
            biggest = conn.execute(f'SELECT max(id) FROM "{table}"').fetchone()[0]
            following = conn.execute(f"SELECT nextval(pg_get_serial_sequence('\"{table}\"', 'id'))").fetchone()[0]
            assert following > biggest, table
        passwords = [p for (p,) in conn.execute("SELECT password FROM auth_user")]
        assert passwords and all(p.startswith("!") for p in passwords)  # unusable until changepassword


def test_import_into_this_emptied_database_and_export_again_is_identical(backup, db, tmp_path):
    assert not Item.objects.exists()
    counts = import_all(folder=backup.folder)
    assert counts == backup.counts
    export_all(out=tmp_path / "b")
    assert _files(tmp_path / "b") == _files(backup.folder)
    assert Item.objects.count() == ITEMS


def test_a_row_the_database_refuses_leaves_nothing_written(backup, db, tmp_path):
    """A backup whose checksums agree but one of its last rows breaks a constraint: refused, nothing kept."""
    broken = _copy(backup, tmp_path)
    name = "studies.response.jsonl"
    order = [m._meta.label_lower for m in backed_up_models()]
    assert order.index("studies.response") > len(order) / 2  # most tables are written before it
    lines = _lines(broken, name)
    row = json.loads(lines[-1])
    row["confidence"] = 9  # outside 1..5: the database's check constraint refuses it
    _rewrite(broken, name, lines[:-1] + [json.dumps(row).encode() + b"\n"])
    with pytest.raises(CommandError, match=rf"{name}:1-{len(lines)}: the database refused a row: .*"
                                           "response_confidence_1_5"):
        call_command("import_all", str(broken))
    written = {m._meta.label_lower: m._base_manager.count() for m in backed_up_models()}
    assert {label: n for label, n in written.items() if n} == {}


def test_a_row_pointing_at_a_missing_row_leaves_nothing_written(backup, db, tmp_path):
    broken = _copy(backup, tmp_path)
    name = "studies.response.jsonl"
    lines = _lines(broken, name)
    row = json.loads(lines[0])
    row["attempt_id"] = 999_999  # no such attempt: the deferred foreign key refuses it at the end
    _rewrite(broken, name, [json.dumps(row).encode() + b"\n", *lines[1:]])
    with pytest.raises(BackupError, match=r"the backup's rows do not fit together: .*studies_response"):
        import_all(folder=broken)
    assert not any(m._base_manager.exists() for m in backed_up_models())


def test_a_database_with_data_is_refused(backup, db):
    User.objects.create_user(username="someone")
    with pytest.raises(CommandError, match=r"not empty: auth\.user \(1 rows\)"):
        call_command("import_all", str(backup.folder))
    assert User.objects.count() == 1 and not Item.objects.exists()


@pytest.mark.parametrize("damage, message", [
    ("edit", r"annotation\.item\.jsonl:1-10: a line here differs"),
    ("drop_last", r"annotation\.item\.jsonl:9: the file ends after 9 rows, the manifest says 10"),
    ("cut", r"annotation\.item\.jsonl:10: the line is cut short"),
    ("garbage", r"annotation\.item\.jsonl:4: not a JSON line"),
    ("field", r"annotation\.item\.jsonl:2: expected the fields"),
    ("order", r"annotation\.item\.jsonl:3: id: .* is not after"),
    ("missing", r"studies\.response\.jsonl: missing from the backup"),
])
def test_a_damaged_file_is_refused_naming_file_and_line(backup, db, tmp_path, damage, message):
    folder = _copy(backup, tmp_path)
    path = folder / "annotation.item.jsonl"
    lines = _lines(folder, "annotation.item.jsonl")
    if damage == "edit":
        lines[6] = lines[6].replace(b'"answer_index":', b'"answer_index":1', 1)
    elif damage == "drop_last":
        lines = lines[:-1]
    elif damage == "cut":
        lines[-1] = lines[-1][:40]
    elif damage == "garbage":
        lines[3] = b'{"id": 4, "context": "unfinished\n'
    elif damage == "field":
        row = json.loads(lines[1])
        row["answer"] = row.pop("answer_index")
        lines[1] = json.dumps(row).encode() + b"\n"
    elif damage == "order":
        lines[1], lines[2] = lines[2], lines[1]
    elif damage == "missing":
        (folder / "studies.response.jsonl").unlink()
    path.write_bytes(b"".join(lines))
    with pytest.raises(BackupError, match=message):
        import_all(folder=folder)
    assert not Item.objects.exists()
    with pytest.raises(CommandError, match=message):  # the command says the same, without a traceback
        call_command("import_all", "--from", str(folder))


def test_a_backup_of_another_schema_or_no_backup_is_refused(backup, db, tmp_path):
    folder = _copy(backup, tmp_path)
    manifest = _manifest(folder)
    manifest["migrations"]["annotation"].append("0099_from_the_future")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BackupError, match=r"schema differs .*not applied here: annotation\.0099_from_the_future"):
        import_all(folder=folder)
    manifest = _manifest(backup.folder)
    manifest["tables"][0]["file"] = "../../etc/passwd"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BackupError, match=r"manifest\.json: tables\[0\]: file '\.\./\.\./etc/passwd' is not"):
        import_all(folder=folder)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(BackupError, match=r"manifest\.json: not valid JSON"):
        import_all(folder=folder)
    (folder / "manifest.json").unlink()
    with pytest.raises(BackupError, match="no manifest"):
        import_all(folder=folder)
    with pytest.raises(CommandError, match="once"):
        call_command("import_all")
    assert not Item.objects.exists()


def test_export_refuses_a_folder_that_holds_files(backup, db, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "notes.txt").write_text("keep me")
    with pytest.raises(CommandError, match="not an empty directory"):
        call_command("export_all", out=str(tmp_path / "old"))
    assert (tmp_path / "old" / "notes.txt").read_text() == "keep me"


def test_password_hashes_only_when_asked_and_then_logins_work_after_a_restore(backup, db, tmp_path):
    import_all(folder=backup.folder)
    user = User.objects.get(username="ann1")
    assert not user.has_usable_password()  # the backup held no hash
    user.set_password("a-new-password")
    user.save()
    export_all(out=tmp_path / "plain")
    assert b"password" not in (tmp_path / "plain" / "auth.user.jsonl").read_bytes()
    call_command("export_all", out=str(tmp_path / "hashes"), with_password_hashes=True)
    assert _manifest(tmp_path / "hashes")["password_hashes"] is True
    call_command("flush", interactive=False, verbosity=0)  # inside this test's transaction: rolled back after it
    assert not User.objects.exists()
    call_command("import_all", str(tmp_path / "hashes"))
    assert User.objects.get(username="ann1").check_password("a-new-password")
    assert User.objects.get(username="ann1").groups.get().name == "annotators"
