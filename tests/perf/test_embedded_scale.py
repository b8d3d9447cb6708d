"""Benchmark: a 12,000-request run on `make run`'s own stack (issue 23): SQLite, the filesystem broker and a worker
of two processes, as `scripts/run.sh` starts it (settings.local, no DATABASE_URL or REDIS_URL), in a var/ of its
own. The test split (1,196 items) is imported, `naive` with 10 samples (11,960 requests) at concurrency 256 against
the stand-in answering in 50 ms (ideal 2.34 s); launched twice: as the dashboard launches it (the default items per
task, split evenly over the worker processes; timed from the launch to the run finished), and by
`manage.py evaluate --wait` (which finds the worker by its mark: the embedded broker answers no ping; its own
`wall_s`). Prints wall, ratio to the ideal and the stand-in's arrivals; asserts every row, none failed.

    pytest tests/perf/test_embedded_scale.py -m perf -s
"""
import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_DIR
from tests.support.model_server import start_server_process

pytestmark = pytest.mark.perf

LATENCY_S, CONCURRENCY, SAMPLES, ITEMS = 0.05, 256, 10, 1196
IDEAL_S = ITEMS * SAMPLES * LATENCY_S / CONCURRENCY

_LAUNCH = """
import sys, time, django
django.setup()
from evaluation.models import Result, RunStatus
from evaluation.services import runs as services
ep = services.endpoint_create(name="embedded-12k", base_url=sys.argv[1], model="stand-in", max_concurrency=256,
                              use_cache=False)
started = time.monotonic()
run = services.run_launch(endpoint=ep, method="naive", split="test", samples=10)
while run.status not in (RunStatus.FINISHED, RunStatus.FAILED) and time.monotonic() - started < 300:
    time.sleep(0.02)
    run.refresh_from_db(fields=["status"])
wall = time.monotonic() - started
rows = Result.objects.filter(run=run)
print(json.dumps({"wall_s": wall, "status": run.status, "rows": rows.count(), "errors": rows.exclude(error="").count()}))
""".replace("import sys, time, django", "import json, sys, time, django")


def _env(var):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DEBUG", "TEST_REDIS_WORKER")}
    env.update(DJANGO_SETTINGS_MODULE="detectbench_web.settings.local", VAR_DIR=str(var), SECRET_KEY="bench-only",
               PYTHONPATH=str(REPO_DIR))
    return env


def _manage(env, *args, timeout=600):
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_DIR, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def test_12000_requests_on_make_runs_stack(detectbench_dir, tmp_path):
    var = tmp_path / "var"
    for folder in ("queue", "processed", "control"):
        (var / "celery-broker" / folder).mkdir(parents=True)
    env = _env(var)
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "import_items", str(detectbench_dir / "test.jsonl"), "--split", "test")
    log = (var / "worker.log").open("wb")
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "detectbench_web", "worker", "--loglevel", "INFO"],
                              cwd=REPO_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while b"ready." not in (var / "worker.log").read_bytes():
            assert worker.poll() is None and time.monotonic() < deadline, (var / "worker.log").read_text()[-3000:]
            time.sleep(0.1)
        print(f"\nmake run's stack (SQLite, filesystem broker, a worker of 2 processes): {ITEMS * SAMPLES} requests, "
              f"latency {LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY}, ideal {IDEAL_S:.2f} s; load average "
              f"{os.getloadavg()[0]:.2f}")
        with start_server_process(latency_s=LATENCY_S, reply_mode="first") as server:
            done = subprocess.run([sys.executable, "-c", _LAUNCH, server.base_url], cwd=REPO_DIR, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
            launched = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  launched as the dashboard does: wall {launched['wall_s']:.2f} s, ratio "
                  f"{launched['wall_s'] / IDEAL_S:.2f}; {launched['rows']} rows, {launched['errors']} failed")
            assert launched == {**launched, "status": "finished", "rows": ITEMS * SAMPLES, "errors": 0}
            line = _manage(env, "evaluate", "--base-url", server.base_url, "--model", "stand-in", "--split", "test",
                           "--samples", str(SAMPLES), "--concurrency", str(CONCURRENCY), "--no-preflight", "--wait",
                           "--no-progress")
            evaluated = json.loads(line.strip().splitlines()[-1])
            print(f"  manage.py evaluate --wait: wall_s {evaluated['wall_s']:.2f} s, ratio "
                  f"{evaluated['wall_s'] / IDEAL_S:.2f}; {evaluated['n']} rows, {evaluated['errors']} failed; "
                  f"load average {os.getloadavg()[0]:.2f}")
            assert evaluated["n"] == ITEMS * SAMPLES and evaluated["errors"] == 0
            assert "run_chunk" in (var / "worker.log").read_text()  # evaluate sent it to the worker
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        log.close()
