"""Queueing by task name (evaluation.execution.queueing): a process that imported no task module (a web server,
a management command) finds every task queueing sends, by importing that task's own module only."""
import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from annotation.models import Item
from evaluation.execution import heartbeats, queueing
from evaluation.services import runs as services
from tests.conftest import REPO_DIR, subprocess_env
from tests.support.items import import_items

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


_GUNICORN_MASTER = """
import json, os, runpy, sys, django
django.setup()
from celery import current_app
from evaluation.execution import queueing
names = sorted(value for key, value in vars(queueing).items() if key.endswith("_TASK") and isinstance(value, str))
def sockets():
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return found
opened = sockets()  # before anything of Celery's runs (reading current_app.tasks finalizes the app)
from kombu.transport import TRANSPORT_ALIASES  # names only: importing a transport is what is checked
transport_module = TRANSPORT_ALIASES[current_app.conf.broker_url.split(":", 1)[0]].partition(":")[0]
transport_before = transport_module in sys.modules
before = {name: name in current_app.tasks for name in names}
import gc
frozen_before = gc.get_freeze_count()
hooks = runpy.run_path(sys.argv[1])
hooks["when_ready"](None)
from django.template import engines
compiled = sorted(name for _, name in engines["jinja2"].env.cache.keys())
card = engines["jinja2"].env.get_template("studies/public/question.html")
layout = engines["jinja2"].env.get_template("studies/public/base.html")
unfrozen = {id(o) for o in gc.get_objects()}  # every object the collector still walks
compiled_frozen = id(card) not in unfrozen and id(layout) not in unfrozen
after = {name: name in current_app.tasks for name in names}
threshold_before = gc.get_threshold()[0]
hooks["post_fork"](None, None)  # what each worker runs after the fork
print(json.dumps({"before": before, "after": after, "new_sockets": sockets() - opened, "frozen_before": frozen_before,
                  "transport": [transport_module, transport_before, transport_module in sys.modules],
                  "backend_resolved": current_app._backend is not None,
                  "frozen_after": gc.get_freeze_count(), "threshold_before": threshold_before,
                  "worker_threshold": gc.get_threshold()[0], "compiled": compiled,
                  "compiled_frozen": compiled_frozen}))
"""


def test_the_web_server_loads_every_task_before_it_forks_without_opening_a_connection():
    """docker/gunicorn.conf.py's ``when_ready`` (run in gunicorn's master, before the workers fork) leaves every task
    that queueing sends registered, the broker's transport imported and the result backend resolved (a worker's first
    launch imports nothing: 147 -> 83-101 ms for a launch of 1,196 items in a slow hour), no socket open to be shared,
    and what the master loaded frozen out of the workers' garbage collections; ``post_fork`` makes a worker collect
    its youngest generation less often (foundation.process_start)."""
    done = subprocess.run([sys.executable, "-c", _GUNICORN_MASTER, str(REPO_DIR / "docker" / "gunicorn.conf.py")],
                          cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["before"]) >= 2 and not any(report["before"].values()), report
    assert all(report["after"].values()), report
    assert report["new_sockets"] <= 0, report
    # What the first message sent would load is loaded too (no connection opened, above): the broker's transport
    # module and the result backend (found among the installed packages' entry points).
    module, loaded_before, loaded_after = report["transport"]
    assert module.startswith("kombu.transport.") and not loaded_before and loaded_after, report
    assert report["backend_resolved"], report
    # The apps' ready() froze what Django loaded; the hook freezes the URLconf, the views and the task modules too.
    assert report["frozen_after"] > report["frozen_before"] + 20_000, report
    # A worker collects its youngest generation less often than Python's default.
    assert report["threshold_before"] == 700 and report["worker_threshold"] == 20_000, report
    # Every participant page (each file of studies/jinja2/studies/public/) is compiled in the master (and frozen with
    # the rest), not in a worker's first request.
    pages = sorted(f"studies/public/{path.name}" for path in (REPO_DIR / "studies/jinja2/studies/public").glob("*.html"))
    assert len(pages) >= 15 and report["compiled"] == pages, report
    assert report["compiled_frozen"], report  # compiled before the freeze, with the page's layout
    assert set(queueing.load_tasks()) == set(report["after"])


@given(n=st.integers(0, 3000), most=st.integers(1, 500), processes=st.integers(1, 8))
@hypothesis_settings(max_examples=400, deadline=None)
def test_split_evenly_covers_every_item_once_in_a_multiple_of_the_processes(n, most, processes):
    items = list(range(10_000, 10_000 + n))
    chunks = queueing.split_evenly(items, most=most, processes=processes)
    assert [i for chunk in chunks for i in chunk] == items  # every item once, in order
    if not items:
        assert chunks == []
        return
    sizes = [len(chunk) for chunk in chunks]
    assert max(sizes) <= most and min(sizes) >= 1
    assert max(sizes) - min(sizes) <= 1  # the processes end together
    # As many chunks as a multiple of the processes, short of one item each; never more than needed for that.
    assert len(chunks) % processes == 0 or len(chunks) == n
    assert len(chunks) < -(-n // most) + processes


@pytest.mark.django_db
def test_a_launch_splits_the_run_evenly_over_the_worker_processes(detectbench_dir, django_capture_on_commit_callbacks,
                                                                    settings, broker):
    """1,196 items at the default 400 per task were three tasks: on two processes, one computed the third alone."""
    import_items(detectbench_dir / "test.jsonl", split="test", limit=13)
    ids = list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))
    settings.EVALUATION_WORKER_PROCESSES = 2
    endpoint = services.endpoint_for_cli(builtin="first-option")
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_launch(endpoint=endpoint, method="naive", ids=ids, chunk_size=5)
    raws = [raw for key in heartbeats.queue_keys_in_order() for raw in broker.lrange(key, 0, -1)]
    sent = [found[2] for raw in raws if (found := heartbeats.chunk_of_message(raw)) and found[1] == run.pk]
    assert sorted(len(chunk) for chunk in sent) == [3, 3, 3, 4]  # not 5, 5, 3
    assert sorted(i for chunk in sent for i in chunk) == sorted(ids)
