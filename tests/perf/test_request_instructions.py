"""Benchmark: the CPU instructions of a participant's requests, counted by valgrind's callgrind: deterministic where
CPU time on this shared 2-core machine varies by a factor of two from hour to hour, so two versions of the code can
be compared exactly (run it in each checkout; `git worktree add` gives an older one).

Each measured participant opens the study's link, consents as the page's form does (answered with the attempt's
page) and presses Start (answered with the first question), through the WSGI application in one process set up as a
gunicorn worker of the image (tests/perf/request_instructions_client.py), under the test settings as the gunicorn
benchmarks (static files without the manifest's lookup). Counted: the Python process's own instructions, not PostgreSQL's, not
the kernel's, not gunicorn's HTTP parsing. Each step is counted on its own over all the measured participants (one
callgrind dump a step): it prints the instructions per participant and of each of its three requests, then those of
the first question's answer, as htmx sends it (the next question's card back), and those of a consent sent by a
script (without the form's field: a redirect, then the attempt's page).

Needs valgrind and its headers (Debian: valgrind) and a C compiler: it fails and says so when they are missing.
Run: `pytest tests/perf/test_request_instructions.py -m perf -s` (about a minute).
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
from tests.perf.request_instructions_client import STEPS
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
    steps = _count(tmp_path / "counts", library, study.slug, env)
    per = {step: count / PARTICIPANTS for step, count in steps.items()}
    joining = sum(per[step] for step in ("landing", "join", "start"))
    scripted = per["landing"] + per["scripted_join"] + per["scripted_page"] + per["start"]
    print(f"\nA participant opening the link, joining and starting as a browser does (3 requests: the consent form's "
          f"answer is the attempt's page; {PARTICIPANTS} measured, study of {len(item_ids)} items): "
          f"{joining / 1e6:.2f} M instructions of the web process ({joining / 3e6:.2f} M per request); PostgreSQL's "
          f"are not counted")
    print(f"  by request: the link (consent page) {per['landing'] / 1e6:.2f} M, joining (consent sent, answered with "
          f"the instructions) {per['join'] / 1e6:.2f} M, Start (the first question) {per['start'] / 1e6:.2f} M")
    print(f"  a script's consent without the form's field (4 requests): {scripted / 1e6:.2f} M: joining, redirected, "
          f"{per['scripted_join'] / 1e6:.2f} M, then the attempt's page {per['scripted_page'] / 1e6:.2f} M")
    print(f"An answer (htmx, the next question's card back): {per['answer'] / 1e6:.2f} M instructions")
    assert all(count > 0 for count in per.values()), per


def _count(folder: Path, library: Path, slug: str, env: dict) -> dict[str, int]:
    """The instructions callgrind counted in each step of the client's measured participants (one dump a step)."""
    folder.mkdir()
    counts = folder / "callgrind.out"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={counts}", sys.executable,
               str(REPO_DIR / "tests" / "perf" / "request_instructions_client.py"), slug, str(PARTICIPANTS),
               str(library)]
    done = subprocess.run(command, cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    dumps = sorted((path for path in folder.glob("callgrind.out.*") if path.suffix[1:].isdigit()),
                   key=lambda path: int(path.suffix[1:]))
    assert len(dumps) == len(STEPS), f"callgrind wrote {[p.name for p in dumps]}, one dump per step expected: {STEPS}"
    totals = [[int(line.split()[1]) for line in path.read_text().splitlines() if line.startswith("totals:")]
              for path in dumps]
    assert all(len(total) == 1 for total in totals), f"a dump without its one totals line: {dumps}"
    return dict(zip(STEPS, (total[0] for total in totals)))
