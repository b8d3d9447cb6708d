"""Shared fixtures: real PostgreSQL (pytest-django), real Redis, a real Celery worker, role users."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import Group

REPO_DIR = Path(__file__).resolve().parent.parent


def _find_data_dir() -> Path:
    """The real DetectBench data: $DETECTBENCH_DATA, else ../shared beside the checkout, else /work/shared."""
    if os.environ.get("DETECTBENCH_DATA"):
        return Path(os.environ["DETECTBENCH_DATA"])
    candidates = [REPO_DIR.parent / "shared" / "detectbench" / "v1.3", Path("/work/shared/detectbench/v1.3")]
    return next((c for c in candidates if (c / "test.jsonl").exists()), candidates[0])


DATA_DIR = _find_data_dir()
# The paper's text (prompt tables), beside the data in the shared folder.
PAPER_PATH = DATA_DIR.parent.parent / "paper" / "piecing-together-clues.txt"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing_requirements() -> list[str]:
    """What the suite needs from outside the repository and does not find (data, paper, browser)."""
    missing = []
    if not (DATA_DIR / "test.jsonl").exists():
        missing.append(f"real DetectBench data: {DATA_DIR}/test.jsonl (set DETECTBENCH_DATA)")
    if not PAPER_PATH.exists():
        missing.append(f"the paper's text: {PAPER_PATH}")
    if not CHROMIUM.exists():
        missing.append(f"Debian's chromium: {CHROMIUM} (apt-get install chromium)")
    if shutil.which("pdflatex") is None:
        missing.append("pdflatex, for the LaTeX table export (apt-get install texlive-latex-base texlive-latex-recommended)")
    return missing


def require(condition: bool, what: str) -> None:
    """Skip when something from outside is missing, except in CI (CI=true), where the test fails and says what."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"missing in CI: {what}", pytrace=False)
    pytest.skip(f"missing: {what}")


def pytest_sessionstart(session):
    """In CI a missing data set or browser stops the run at once, loudly, instead of skipping tests."""
    if IN_CI and not session.config.option.collectonly:
        missing = missing_requirements()
        if missing:
            pytest.exit("CI=true and the test suite cannot run completely; missing:\n  - " + "\n  - ".join(missing),
                        returncode=3)


@pytest.fixture(scope="session")
def detectbench_dir() -> Path:
    require((DATA_DIR / "test.jsonl").exists(), f"real DetectBench data at {DATA_DIR} (set DETECTBENCH_DATA)")
    return DATA_DIR


@pytest.fixture(scope="session")
def paper_path() -> Path:
    require(PAPER_PATH.exists(), f"the paper's text at {PAPER_PATH}")
    return PAPER_PATH


def _make_user(django_user_model, username: str, group: str | None, **extra):
    user = django_user_model.objects.create_user(username=username, password="pw-" + username, **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def annotator(db, django_user_model):
    return _make_user(django_user_model, "ann1", "annotators")


@pytest.fixture
def annotator2(db, django_user_model):
    return _make_user(django_user_model, "ann2", "annotators")


@pytest.fixture
def researcher(db, django_user_model):
    return _make_user(django_user_model, "res1", "researchers", is_staff=True)


@pytest.fixture
def plain_user(db, django_user_model):
    """An account with no role (neither annotator nor researcher)."""
    return _make_user(django_user_model, "nobody", None)


@pytest.fixture
def annotator_client(client, annotator):
    client.force_login(annotator)
    return client


@pytest.fixture
def researcher_client(client, researcher):
    client.force_login(researcher)
    return client


def database_url_for_subprocess() -> str:
    """The URL of the database the tests are using right now (the test database)."""
    from django.db import connection

    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child process (worker, server) that must see the test database."""
    env = os.environ.copy()
    env.update(
        DJANGO_SETTINGS_MODULE="detectbench_web.settings.test",
        DATABASE_URL=database_url_for_subprocess(),
        PYTHONPATH=str(REPO_DIR),
    )
    env.update(extra)
    return env


class WorkerProcess:
    def __init__(self, name: str, proc: subprocess.Popen, log: Path):
        self.name, self.proc, self.log = name, proc, log

    def stop(self, sig: int | None = None) -> None:
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_celery_worker(tmp_path: Path, *, concurrency: int = 2, pool: str = "prefork",
                        extra_args: tuple[str, ...] = (), env: dict | None = None) -> WorkerProcess:
    """Start a real `celery worker` process against the real Redis and the test database; wait until it answers."""

    name = f"test-{uuid.uuid4().hex[:8]}@%h"
    log = tmp_path / f"worker-{uuid.uuid4().hex[:6]}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "detectbench_web", "worker", "--loglevel", "INFO",
         "--pool", pool, "--concurrency", str(concurrency), "--hostname", name,
         "--without-gossip", "--without-mingle", *extra_args],
        cwd=REPO_DIR, env=env or subprocess_env(), stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    worker = WorkerProcess(name, proc, log)
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if "ready." in log.read_text(errors="replace"):
            return worker
        time.sleep(0.2)
    worker.stop()
    raise RuntimeError(f"celery worker did not become ready:\n{log.read_text()[-3000:]}")


@pytest.fixture
def celery_worker(transactional_db, tmp_path):
    """A real Celery worker process; tests using it see committed data only (transactional_db)."""
    worker = start_celery_worker(tmp_path)
    yield worker
    worker.stop()


@pytest.fixture(autouse=True)
def _site_language():
    """Every test starts in the site's language: a request in another one (LocaleMiddleware activates it for the
    thread and leaves it there) or a test that activates one must not change the words the next test reads."""
    from django.conf import settings
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(scope="session", autouse=True)
def _clean_test_broker():
    """Start every session with an empty broker database so stale messages are never consumed."""
    import redis
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("redis://"):
        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    yield


# Modules whose tests stay together on one pytest-xdist worker: their module fixtures start a whole
# stack (migrated database, gunicorn, worker, beat) that would otherwise start once per worker.
XDIST_WHOLE_MODULES = {"tests/project/test_compose.py"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `-n N` (with the default --dist load): tests go to the workers one at a time, in collection
    order, so each worker runs them in pytest-django's order (tests in a rolled-back transaction before
    those that commit and empty the tables, as in a serial run); the modules above go as one unit."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in XDIST_WHOLE_MODULES else nodeid

    return _Scheduling(config, log)


@pytest.fixture
def database_down():
    """While in use, every new connection of this process goes to a port where no database listens."""
    from django.db import connection

    settings_dict = connection.settings_dict
    port = settings_dict.get("PORT")

    class Down:
        def __enter__(self):
            connection.close()
            settings_dict["PORT"] = "1"

        def __exit__(self, *exc):
            settings_dict["PORT"] = port
            connection.close()

    yield Down()
    settings_dict["PORT"] = port
