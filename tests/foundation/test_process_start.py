"""foundation.process_start: what a process loaded before it works is frozen out of the collector's walks; what it
makes afterwards is still collected. Each check runs in a fresh interpreter (freezing this one would keep the
suite's objects from ever being collected)."""
import json
import subprocess
import sys

from tests.conftest import REPO_DIR, subprocess_env

_PROBE = """
import gc, json, weakref
from foundation.process_start import freeze_startup_objects

class Node:
    pass

kept = [Node() for _ in range(1000)]          # alive at start: frozen
garbage = Node(); garbage.self = garbage       # a cycle already unreachable at start: collected, not frozen
garbage_ref = weakref.ref(garbage); del garbage
first = freeze_startup_objects()
loaded_later = [Node() for _ in range(500)]   # loaded after a first freeze (the apps' ready()): frozen by the next
again = freeze_startup_objects()
later = Node(); later.self = later             # a cycle made afterwards: still collected
later_ref = weakref.ref(later); del later
gc.collect()
walked = {id(o) for o in gc.get_objects()}  # what the collector still walks: not the frozen objects
print(json.dumps({"first": first, "again": again, "garbage_freed": garbage_ref() is None,
                  "later_freed": later_ref() is None, "kept_frozen": not any(id(n) in walked for n in kept),
                  "loaded_later_frozen": not any(id(n) in walked for n in loaded_later)}))
"""


def _run(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO_DIR, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_startup_objects_are_frozen_once_and_later_cycles_are_still_collected():
    report = _run(_PROBE)
    assert report["first"] >= 1000  # at least the objects kept at start
    assert report["again"] >= report["first"] + 500
    assert report["garbage_freed"]  # collected before freezing, never frozen
    assert report["later_freed"]  # the collector still works for what comes after
    assert report["kept_frozen"] and report["loaded_later_frozen"]


_CELERY_WORKER_START = """
import gc, json, django
django.setup()
from evaluation import tasks
before = gc.get_freeze_count()
from celery.signals import worker_init
worker_init.send(sender=None)  # what a worker sends before its pool forks (evaluation.tasks is connected to it)
import openai
print(json.dumps({"before": before, "after": gc.get_freeze_count(), "sdk_frozen": not gc.is_tracked(openai.OpenAI)
                  or all(openai.OpenAI is not o for o in gc.get_objects())}))
"""


def test_a_celery_worker_freezes_what_it_loaded_with_the_sdk_before_its_pool_forks():
    report = _run(_CELERY_WORKER_START)
    assert report["before"] > 0  # what Django loaded (the apps' ready())
    assert report["after"] > report["before"] + 50_000  # and the task modules and the SDK
    assert report["sdk_frozen"]


_YOUNG = """
import gc, json
from foundation.process_start import YOUNG_GENERATION_THRESHOLD, collect_young_less_often
gc.collect()
before = gc.get_threshold()
collect_young_less_often()
after = gc.get_threshold()
counts = []
for _ in range(3):                           # 3,000 young containers: no collection of the youngest meanwhile
    made = [[] for _ in range(1000)]
    counts.append(gc.get_count()[0])
    del made
print(json.dumps({"before": before, "after": after, "young": counts}))
"""


def test_a_web_worker_collects_its_youngest_generation_less_often():
    report = _run(_YOUNG)
    assert report["after"] == [20_000, *report["before"][1:]]
    assert report["before"][0] < 20_000
    assert report["young"][-1] >= 1000  # with the default threshold (700) the count would have been reset
