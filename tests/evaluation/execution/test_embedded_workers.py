"""On make run's filesystem broker no worker answers a ping: a real worker started on it leaves a mark while it
runs, which `evaluate --wait` finds (then the run goes to the worker's processes instead of one process), and
which a stopped or killed worker no longer counts for."""
import subprocess
import sys

import pytest

from evaluation.execution import embedded_workers
from evaluation.management.commands.evaluate import workers_available
from tests.conftest import start_celery_worker, subprocess_env


@pytest.fixture
def embedded(settings, tmp_path):
    for folder in ("queue", "processed", "control"):
        (tmp_path / "celery-broker" / folder).mkdir(parents=True)
    settings.CELERY_BROKER_URL, settings.VAR_DIR = "filesystem://localhost//", tmp_path
    return tmp_path


def _worker(tmp_path):
    return start_celery_worker(tmp_path, concurrency=1, pool="solo",
                               env=subprocess_env(REDIS_URL="", VAR_DIR=str(tmp_path)))


@pytest.mark.django_db(transaction=True)
def test_a_worker_on_the_embedded_broker_is_found_while_it_runs(embedded):
    assert not workers_available()
    worker = _worker(embedded)
    try:
        assert (embedded / "celery-broker" / "workers" / str(worker.proc.pid)).exists()
        assert workers_available() and embedded_workers.running()
    finally:
        worker.stop()
    assert not workers_available()  # a warm shutdown takes its mark away (a killed worker's: a dead pid, below)


def test_marks_count_only_on_the_embedded_broker_and_only_live_pids(embedded, settings):
    marks = embedded / "celery-broker" / "workers"
    # A process that left its mark and was SIGKILLed: the mark stays, its pid is dead.
    gone = subprocess.Popen([sys.executable, "-c", "import os, signal; print(os.getpid(), flush=True); "
                             "os.kill(os.getpid(), signal.SIGKILL)"], stdout=subprocess.PIPE, text=True)
    gone.wait(timeout=30)
    marks.mkdir()
    (marks / gone.stdout.read().strip()).touch()
    (marks / "not-a-pid").touch()
    assert not embedded_workers.running()
    embedded_workers.mark_running()  # this process: alive
    assert embedded_workers.running()
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    assert not embedded_workers.running()  # marks mean nothing on a broker that answers pings
    settings.CELERY_BROKER_URL = "filesystem://localhost//"
    embedded_workers.unmark()
    assert not embedded_workers.running()
