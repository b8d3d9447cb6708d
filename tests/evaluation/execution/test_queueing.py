"""Queueing by task name (evaluation.execution.queueing): a process that imported no task module (a web server,
a management command) finds every task queueing sends, by importing that task's own module only."""
import json
import subprocess
import sys

from evaluation.execution import queueing
from tests.conftest import REPO_DIR, subprocess_env

_PROBE = """
import json, sys, django
django.setup()
from celery import current_app
from evaluation.execution import queueing
names = sys.argv[1:]
before = {name: name in current_app.tasks for name in names}
found = {name: queueing._task(name).name for name in names}
print(json.dumps({"before": before, "found": found,
                  "other_task_modules": sorted(m for m in sys.modules if m.endswith(".tasks")
                                               and m.split(".")[0] in ("annotation", "studies"))}))
"""


def test_every_task_queueing_sends_is_found_in_a_fresh_process_from_its_own_module():
    names = [value for key, value in vars(queueing).items() if key.endswith("_TASK") and isinstance(value, str)]
    assert len(names) >= 2, names
    done = subprocess.run([sys.executable, "-c", _PROBE, *names], cwd=REPO_DIR, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not any(report["before"].values()), report["before"]  # nothing was registered before the lookup
    assert report["found"] == {name: name for name in names}
    # Only the tasks' own modules were imported: not every app's (Celery's autodiscovery, which under Django also
    # runs all of the system checks).
    assert report["other_task_modules"] == []
