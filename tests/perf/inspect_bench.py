"""Inspect AI beside our benchmarks: `inspect-ai` from PyPI, in its own virtualenv at var/inspect-venv (or
$INSPECT_VENV), run as `inspect eval` in its own process on the prompts a DetectBench Web run sends, against the
same kind of stand-in server.

Without that virtualenv the comparison is skipped with a message; INSPECT_BENCH=1 has ``inspect_python`` create it
(python3 -m venv + pip install inspect-ai openai). ``run_inspect`` waits for the process with ``os.wait4`` (its own
CPU time and peak RSS, exact) and samples its CPU time and RSS from /proc every 0.1 s meanwhile (``trace``), so a
caller can take the CPU spent between two instants (the first and last requests) and the RSS at any of them.
"""
from __future__ import annotations

import bisect
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from annotation.models import Item
from evaluation.execution.planning import item_view
from evaluation.prompting.methods import get_method
from evaluation.prompting.prompts import present

REPO_DIR = Path(__file__).resolve().parent.parent.parent
INSPECT_VENV = Path(os.environ.get("INSPECT_VENV", REPO_DIR / "var" / "inspect-venv"))
SKIPPED = (f"Inspect AI comparison skipped: no virtualenv at {INSPECT_VENV} "
           "(set INSPECT_BENCH=1 to create it: python3 -m venv + pip install inspect-ai openai)")

INSPECT_TASK = '''
import json
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def detectbench_naive():
    with open({path!r}) as handle:
        records = [json.loads(line) for line in handle]
    return Task(dataset=[Sample(id=r["id"], input=r["input"], target=r["target"]) for r in records],
                solver=generate(), scorer=match(location="end"))
'''


def inspect_python() -> Path | None:
    python = INSPECT_VENV / "bin" / "python"
    if (INSPECT_VENV / "bin" / "inspect").exists():
        return python
    if os.environ.get("INSPECT_BENCH") == "1":
        subprocess.run([sys.executable if sys.version_info >= (3, 10) else "python3", "-m", "venv", str(INSPECT_VENV)],
                       check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "inspect-ai", "openai"], check=True)
        return python
    return None


def inspect_version() -> str:
    found = sorted((INSPECT_VENV / "lib").glob("python3*/site-packages/inspect_ai-*.dist-info"))
    return found[-1].name.removeprefix("inspect_ai-").removesuffix(".dist-info") if found else "?"


def naive_samples(run) -> list[dict]:
    """One Inspect sample per item of ``run``: the user message our `naive` run sends for it (the run's option
    order and labels: the original order, numbered) and its answer label as the target."""
    method = get_method("naive")
    samples = []
    for item in Item.objects.filter(pk__in=run.item_ids).order_by("pk"):
        shown = present(item_view(item), seed=run.seed, permute=False)
        samples.append({"id": item.pk, "input": method.messages(shown, ())[-1]["content"],
                        "target": shown.answer_label})
    return samples


def _proc_cpu_rss(pid: int) -> tuple[float, float] | None:
    """(CPU seconds, RSS MB) of a running process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return ((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
            int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20)


def _read_log(log_dir: Path) -> dict:
    """The log: a .json log whole, an .eval log's header (stats, results; through `inspect log dump`, as its zip
    entries may be zstd-compressed)."""
    path = next(p for p in log_dir.iterdir() if p.suffix in (".json", ".eval"))
    if path.suffix == ".json":
        return json.loads(path.read_text())
    dump = subprocess.run([str(INSPECT_VENV / "bin" / "inspect"), "log", "dump", "--header-only", str(path)],
                          capture_output=True, text=True, check=True)
    return json.loads(dump.stdout)


def run_inspect(tmp_path: Path, base_url: str, samples: list[dict], *, max_connections: int, epochs: int = 1,
                log_format: str = "json", timeout_s: float = 600) -> dict:
    """`inspect eval` on ``samples`` (each repeated ``epochs`` times) against the stand-in at ``base_url``.

    Returns eval_s (the log's started_at to completed_at, whole seconds; eval_window: them on time.monotonic()),
    process_s (the whole process, start-up and log written), accuracy, status, samples, epochs, cpu_s and
    peak_rss_mb (the process's own, from wait4), and trace: [(time.monotonic(), CPU s, RSS MB)] every 0.1 s
    while it ran. Fails with the output's tail if the process fails or outlives ``timeout_s`` (then killed)."""
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in samples))
    task = tmp_path / "inspect_task.py"
    task.write_text(INSPECT_TASK.format(path=str(data)))
    logs, out = tmp_path / "logs", tmp_path / "inspect-output.txt"
    env = dict(os.environ, STANDIN_BASE_URL=base_url, STANDIN_API_KEY="not-needed", INSPECT_LOG_DIR=str(logs))
    args = [str(INSPECT_VENV / "bin" / "inspect"), "eval", task.name, "--model", "openai-api/standin/stand-in",
            "--max-connections", str(max_connections), "--log-dir", str(logs), "--log-format", log_format,
            "--display", "none", "--max-retries", "3"]
    if epochs != 1:
        args += ["--epochs", str(epochs)]
    trace: list[tuple[float, float, float]] = []
    started = time.monotonic()
    with out.open("wb") as sink:
        proc = subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > timeout_s:
            os.kill(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise AssertionError(f"Inspect AI did not finish within {timeout_s:.0f} s (killed): "
                                 f"{out.read_text(errors='replace')[-3000:]}")
        sample = _proc_cpu_rss(proc.pid)
        if sample is not None:
            trace.append((time.monotonic(), *sample))
        time.sleep(0.1)
    process_s = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, f"inspect eval exited {proc.returncode}: {out.read_text(errors='replace')[-3000:]}"
    log = _read_log(logs)
    stats = log["stats"]
    eval_from, eval_to = (datetime.fromisoformat(stats[key]).timestamp() for key in ("started_at", "completed_at"))
    to_monotonic = time.monotonic() - time.time()
    accuracy = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    return {"eval_s": eval_to - eval_from, "process_s": process_s, "accuracy": accuracy, "status": log.get("status"),
            "samples": len(samples), "epochs": epochs, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024, "trace": trace,
            "eval_window": (eval_from + to_monotonic, eval_to + to_monotonic)}


def at(trace: list[tuple[float, float, float]], instant: float) -> tuple[float, float]:
    """(CPU s, RSS MB) of the traced process at ``instant`` (the last sample before it, else the first)."""
    i = bisect.bisect_right([t for t, _, _ in trace], instant) - 1
    return trace[max(i, 0)][1:]


def eval_cpu_s(result: dict) -> float:
    """CPU time the inspect process spent within its eval (the log's started_at to completed_at), to 0.1 s."""
    start, end = result["eval_window"]
    return at(result["trace"], end)[0] - at(result["trace"], start)[0]
