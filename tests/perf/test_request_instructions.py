"""Benchmark: the CPU instructions of a participant's requests, counted by valgrind's callgrind: deterministic where
CPU time on this shared 2-core machine varies by a factor of two from hour to hour, so two versions of the code can
be compared exactly (run it in each checkout; `git worktree add` gives an older one).

Each measured participant opens the study's link, consents, gets the attempt's page and presses Start (answered with
the first question), through the WSGI application in one process set up as a gunicorn worker of the image
(tests/perf/request_instructions_client.py), under the test settings as the gunicorn benchmarks (static files
without the manifest's lookup). Counted: the Python process's own instructions, not PostgreSQL's, not
the kernel's, not gunicorn's HTTP parsing. It prints the instructions per participant and per request, then those of
an answer (the same walk again with the first question answered, as htmx sends it, less the walk).

Needs valgrind and its headers (Debian: valgrind) and a C compiler: it fails and says so when they are missing.
Run: `pytest tests/perf/test_request_instructions.py -m perf -s` (about a minute and a half).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from annotation.models import Item
from studies.models import StudyStatus
from studies.services import study_create
from tests.conftest import REPO_DIR, subprocess_env
from tests.support.items import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]

PARTICIPANTS = int(os.environ.get("BENCH_PARTICIPANTS", "30"))
TOGGLE = """#include <valgrind/callgrind.h>
void measure_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void measure_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""


def _toggle_library(folder: Path) -> Path:
    missing = [tool for tool in ("valgrind", "gcc") if shutil.which(tool) is None]
    assert not missing and Path("/usr/include/valgrind/callgrind.h").exists(), (
        f"this benchmark needs valgrind (with its headers) and gcc: missing {missing or 'valgrind/callgrind.h'} "
        "(Debian: apt-get install valgrind gcc)")
    source, library = folder / "toggle.c", folder / "libtoggle.so"
    source.write_text(TOGGLE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True)
    return library


def test_instructions_of_a_participant_joining_and_starting(detectbench_dir, tmp_path):
    library = _toggle_library(tmp_path)
    import_items(detectbench_dir / "test.jsonl", split="test")
    import_items(detectbench_dir / "train.jsonl", split="train")
    item_ids = list(Item.objects.order_by("pk").values_list("pk", flat=True))
    study = study_create(slug="instructions", item_ids=item_ids, status=StudyStatus.OPEN, per_participant=15, raters=3,
                         time_limit_seconds=36000, completion_code="I")
    env = subprocess_env(ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_POOL="1", DATABASE_POOL_MAX="1", DEBUG="0",
                         LOG_LEVEL="ERROR")
    joining = _count(tmp_path / "joining", library, study.slug, env) / PARTICIPANTS
    print(f"\nA participant opening the link, joining, reading the instructions and starting (4 requests, "
          f"{PARTICIPANTS} measured, study of {len(item_ids)} items): {joining / 1e6:.2f} M instructions of "
          f"the web process ({joining / 4e6:.2f} M per request); PostgreSQL's are not counted")
    answering = _count(tmp_path / "answering", library, study.slug, env, "answer") / PARTICIPANTS
    assert answering > joining
    print(f"An answer (htmx, the next question's card back), counted as the same walk with the first question "
          f"answered, less the walk: {(answering - joining) / 1e6:.2f} M instructions")


def _count(folder: Path, library: Path, slug: str, env: dict, *mode: str) -> int:
    """The instructions callgrind counted in the client's measured part (its participants' requests)."""
    folder.mkdir()
    counts = folder / "callgrind.out"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={counts}", sys.executable,
               str(REPO_DIR / "tests" / "perf" / "request_instructions_client.py"), slug, str(PARTICIPANTS),
               str(library), *mode]
    done = subprocess.run(command, cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    dumps = [path for path in folder.glob("callgrind.out*") if path.name != "callgrind.out"] or [counts]
    totals = [int(line.split()[1]) for path in dumps for line in path.read_text().splitlines()
              if line.startswith("totals:")]
    assert totals and max(totals) > 0, f"callgrind counted nothing: {[p.name for p in dumps]}"
    return max(totals)
