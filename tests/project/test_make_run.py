"""`make run` (issues 20 and 23): one setup command that does only what is missing, a demo study that passes its own
setup checks, production mode (DEBUG off, a local secret key, the app's own error pages, collected static files) and
no warning at start.

The first tests run `setup_demo` the way tests/support/make_run.py does (on the test database); the last ones run
`scripts/run.sh` itself on a fresh SQLite database in a temporary var/, as a newcomer does.
"""
from __future__ import annotations

import io
import os
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Item
from detectbench_web import demo
from evaluation.models import JudgeRun, Run
from studies.allocation import quota_fit
from studies.management.bots import run_bots
from studies.models import Study
from studies.setup_checks import setup_warnings, translation_coverage
from tests.conftest import REPO_DIR, start_celery_worker
from tests.support.make_run import DEMO_PASSWORDS, RUN_SH, make_run_database, migrated_rows

PY = REPO_DIR / ".venv" / "bin" / "python"


def _setup(*args: str) -> str:
    out = io.StringIO()
    call_command("setup_demo", *args, stdout=out, stderr=out)
    return out.getvalue()


def _counts() -> dict:
    return {"items": Item.objects.count(), "users": get_user_model().objects.count(), "studies": Study.objects.count(),
            "runs": Run.objects.count(), "judge_runs": JudgeRun.objects.count()}


@pytest.mark.django_db(transaction=True)
def test_the_demo_study_make_run_builds_passes_every_setup_check():
    make_run_database()
    study = Study.objects.get(slug="demo")
    assert (study.per_participant, study.raters, study.pool.count()) == (15, 3, 20)
    assert setup_warnings(study) == []
    assert all(coverage.complete for coverage in translation_coverage(study))
    fit = quota_fit(study.pool.count(), study.raters, study.per_participant)
    assert fit.divides and fit.complete_attempts == 4 and fit.stranded_answers == 0
    assert (study.status, study.completion_code, study.timeout_completion_code) == ("open", "DEMO2026",
                                                                                    "DEMO2026-TIMEOUT")


@pytest.mark.django_db(transaction=True)
def test_setup_runs_once_and_a_second_run_changes_nothing_and_keeps_every_edit():
    from annotation.services import item_update

    migrated_rows()
    first = _setup("--no-static")
    assert "demo study: created study demo" in first and "created annotator / annotator-demo" in first
    after_first = _counts()
    assert after_first["runs"] == 7 and after_first["judge_runs"] == 2  # 3 models x 2 methods + free-text; 2 judged
    assert all(run.status == "finished" for run in Run.objects.all())
    # What people did in the app meanwhile: an item edited, a password changed.
    item = Item.objects.get(source="sample", external_id="9001")
    item_update(item_id=item.pk, base_version=item.version, changes={"question": "Edited in the app?"}, note="edit")
    researcher = get_user_model().objects.get(username="researcher")
    researcher.set_password("changed-by-its-owner")
    researcher.save()

    second = _setup("--no-static")
    assert _counts() == after_first
    for line in ("database: up to date", "demo accounts: all present", "demo study: kept /s/demo/",
                 "baseline runs: all present", "judge runs: all present"):
        assert line in second, second
    assert Item.objects.get(pk=item.pk).question == "Edited in the app?"
    assert get_user_model().objects.get(username="researcher").check_password("changed-by-its-owner")


@pytest.mark.django_db(transaction=True)
def test_only_the_missing_runs_are_made_again():
    migrated_rows()
    _setup("--no-static", "--runs", "none")
    assert Run.objects.count() == 0
    _setup("--no-static")
    Run.objects.filter(endpoint__model="random", method="naive").delete()
    assert demo.missing_baselines() == {"random": ["naive"]}
    out = _setup("--no-static")
    assert "baseline runs: random naive" in out and "first-option" not in out.split("baseline runs:")[1].split("\n")[0]
    assert demo.missing_baselines() == {} and Run.objects.count() == 7


@pytest.mark.django_db(transaction=True)
def test_runs_cut_short_by_a_ctrl_c_are_resumed_by_the_next_setup():
    migrated_rows()
    _setup("--no-static")
    run = Run.objects.get(endpoint__model="lexical", method="naive")
    run.results.filter(item__external_id__in=["9001", "9002", "9003"]).delete()
    Run.objects.filter(pk=run.pk).update(status="running", finished_at=None)
    judge_run = JudgeRun.objects.get(task="screening")
    JudgeRun.objects.filter(pk=judge_run.pk).update(status="running", finished_at=None)
    assert demo.runs_missing()
    out = _setup("--no-static")
    assert f"run {run.pk} resumed" in out and f"judge run {judge_run.pk} resumed" in out
    run.refresh_from_db()
    judge_run.refresh_from_db()
    assert run.status == "finished" and run.results.count() == 24 and judge_run.status == "finished"
    assert Run.objects.count() == 7 and not demo.runs_missing()


def test_the_demo_accounts_log_in_with_the_passwords_the_readme_gives():
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    for username, password in DEMO_PASSWORDS.items():
        assert re.search(rf"`{username}` \| `{password}`", readme), username


@pytest.mark.django_db(transaction=True)
def test_runs_handed_to_the_worker_are_computed_there(tmp_path):
    migrated_rows()
    out = _setup("--no-static", "--runs", "worker")
    assert "the worker computes them once it starts" in out and Run.objects.count() == 0
    worker = start_celery_worker(tmp_path)
    try:
        deadline = time.monotonic() + 120
        while demo.runs_missing() or Run.objects.exclude(status="finished").exists() or \
                JudgeRun.objects.exclude(status="finished").exists():
            assert time.monotonic() < deadline, worker.log.read_text()[-3000:]
            time.sleep(0.5)
    finally:
        worker.stop()
    assert Run.objects.count() == 7 and JudgeRun.objects.count() == 2
    assert "model and judge runs: all present" in _setup("--no-static", "--runs", "worker")


# --- scripts/run.sh itself, on a fresh SQLite database ------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, cookies: str = "") -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookies} if cookies else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


@pytest.fixture
def make_run(tmp_path):
    """scripts/run.sh with a temporary var/ and a free port, in an environment of its own (no test settings)."""
    if not PY.exists():
        pytest.skip(f"no {PY}: `make install` first")
    started: list[subprocess.Popen] = []
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "VAR_DIR": str(tmp_path / "var"), "PORT": str(port)}

    def start() -> tuple[subprocess.Popen, Path]:
        log = tmp_path / f"run-{len(started) + 1}.log"
        proc = subprocess.Popen([str(RUN_SH)], cwd=REPO_DIR, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                start_new_session=True)
        started.append(proc)
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            try:
                if _get(f"http://127.0.0.1:{port}/accounts/login/")[0] == 200:
                    return proc, log
            except OSError:
                pass
            time.sleep(0.2)

    def stop(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)

    yield start, stop, port, tmp_path / "var"
    for proc in started:
        stop(proc)


def test_make_run_starts_in_production_mode_without_a_warning_and_a_second_start_does_nothing_again(make_run):
    start, stop, port, var = make_run
    base = f"http://127.0.0.1:{port}"
    proc, log = start()
    key = var / "secret_key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text().strip()) >= 50
    secret = key.read_text()
    # The app's own 404 page, not Django's technical one (DEBUG off), with its stylesheet served by whitenoise.
    status, page = _get(f"{base}/no-such-page/")
    assert status == 404 and "Page not found · DetectBench Web" in page
    assert "URLconf" not in page and "DEBUG = True" not in page
    stylesheet = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page)
    assert stylesheet, page[:2000]
    assert _get(base + stylesheet.group(1))[0] == 200
    assert _get(f"{base}/s/demo/")[0] == 200
    # A participant's whole attempt on make run's SQLite (prepared reads and inserts, the Python hand-out): every
    # answer stored, the completion code shown.
    (walk,) = run_bots(base, "demo", 1, concurrency=1, id_prefix="sqlite-walk")
    assert walk.outcome == "complete" and walk.answered == 15 and walk.completion_code, walk
    assert not walk.server_errors
    # The worker adds the demo's model and judge runs after the server is up.
    deadline = time.monotonic() + 180
    while True:
        with sqlite3.connect(f"file:{var / 'db.sqlite3'}?mode=ro", uri=True, timeout=5) as db:
            runs = db.execute("select count(*) from evaluation_run where status = 'finished'").fetchone()[0]
            judged = db.execute("select count(*) from evaluation_judgerun where status = 'finished'").fetchone()[0]
        if (runs, judged) == (7, 2):
            break
        assert time.monotonic() < deadline, (runs, judged, (var / "log" / "worker.log").read_text()[-3000:])
        time.sleep(0.5)
    stop(proc)
    first = log.read_text()

    proc, log = start()
    second = log.read_text()
    stop(proc)
    assert key.read_text() == secret  # generated once, kept
    for output in (first, second):
        assert "setup done" in output and "DetectBench Web is running at" in output
        # What the start printed (the lines the requests above logged aside: a 404 is logged as a warning).
        start = "\n".join(line for line in output.splitlines()
                           if not re.search(r"django\.(request|server): ", line))
        assert "warning" not in start.lower(), start
        assert "Traceback" not in start and "unapplied migration" not in start, start
    assert re.search(r"database: \d+ migrations applied", first), first
    for line in ("database: up to date", "sample data: train.jsonl: created 0", "demo accounts: all present",
                 "demo study: kept /s/demo/", "model and judge runs: all present", "static files: up to date"):
        assert line in second, second


def test_the_settings_make_run_uses_silence_exactly_sqlites_covering_index_warning(tmp_path):
    """models.W040 (SQLite ignores an index's INCLUDE columns) is silenced for SQLite only, and nothing else is."""
    if not PY.exists():
        pytest.skip(f"no {PY}")
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.DEBUG, s.SILENCED_SYSTEM_CHECKS, s.STORAGES['staticfiles']['BACKEND'], len(s.SECRET_KEY))")
    (tmp_path / "secret_key").write_text("k" * 60 + "\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "VAR_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "detectbench_web.settings.local"}
    out = subprocess.run([str(PY), "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "['models.W040']",
                                  "django.contrib.staticfiles.storage.ManifestStaticFilesStorage", "60"]
    pg = subprocess.run([str(PY), "-c", code], cwd=REPO_DIR, capture_output=True, text=True, timeout=120,
                        env={**env, "DATABASE_URL": "postgres://u@db:5432/x"})
    assert pg.returncode == 0, pg.stderr
    assert pg.stdout.split()[1] == "[]"
    check = subprocess.run([str(PY), "manage.py", "check", "--database", "default", "--fail-level", "WARNING"],
                           cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "W040" not in check.stdout + check.stderr, check.stdout + check.stderr


def test_run_sh_starts_two_django_processes_not_fifteen():
    """The setup is one process; then the web server (and the worker) start: each pays Django's start once."""
    commands = re.findall(r"^\s*(?:\S+=\S+ )*\$PY manage\.py (\w+)", RUN_SH.read_text(), flags=re.MULTILINE)
    assert commands == ["setup_demo", "runserver"]
