import subprocess, sys, time
import pytest
from studies.services import study_create
from tests.conftest import REPO_DIR, subprocess_env
from tests.studies.conftest import import_items
from tests.perf.test_study_load import server  # noqa: F401

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

def test_spy(server, detectbench_dir):
    ids = import_items(detectbench_dir, 250)
    study_create(slug="spy", item_ids=ids, per_participant=15, raters=6, time_limit_seconds=3600, status="open", completion_code="X")
    bots = subprocess.Popen([sys.executable, "manage.py", "run_study_bots", "--study", "spy", "--participants", "100",
        "--concurrency", "100", "--base-url", server.url, "--json"], cwd=REPO_DIR, env=subprocess_env(), stdout=subprocess.DEVNULL)
    time.sleep(6)
    spies = [subprocess.Popen(["/tmp/pyspy/bin/py-spy", "record", "-p", str(pid), "-d", "12", "-r", "200", "-f", "raw", "-o", f"/tmp/prof/spy{i}.txt", "--nonblocking"],
             env={"PYTHONPATH": "/tmp/pyspy"}) for i, pid in enumerate(server.worker_pids()[:1])]
    spies.append(subprocess.Popen(["/tmp/pyspy/bin/py-spy", "record", "-p", str(bots.pid), "-d", "12", "-r", "100", "-f", "raw", "-o", "/tmp/prof/spybots.txt", "--nonblocking"]))
    for s in spies: s.wait()
    bots.wait()
