"""Benchmark: how long a process takes to start (issue 17, "fast start"). Printed; goals, not assertions.

Prints the wall time of `manage.py check` (loads the apps and every URL) and of `manage.py help` (the start of
any management command: settings and apps), the median of 5 each, against the goals (under 1 s and 1.5 s on
this machine), and the 10 largest imports of `python -X importtime manage.py check`: the modules imported at
the top level (Django's own machinery, the URL configuration, ...) by cumulative time, which add up to the
whole, then the 10 largest packages (project or not) by their modules' own time.

Before (commit 0508164): URL loading imported scipy, scikit-learn, statsmodels, matplotlib, numpy, the openai
SDK and rouge-score/nltk, and the garbage collector ran through the start. `manage.py check` took 3.8 s and
`manage.py help` 2.2 s (medians of 5 on this machine; after: 0.88 s and 0.66 s). The largest imports were
annotation.services 2.7 s (annotation.trust: scipy.stats 1.4 s, sklearn.metrics 0.8 s), evaluation.views.analysis
2.1 s (the openai SDK 1.7 s), annotation.views.belief 1.1 s (matplotlib.figure 1.1 s) and studies.services 0.8 s
(rouge-score's nltk 0.7 s). Those libraries are now imported by the functions that use them
(tests/project/test_lazy_imports.py keeps it so), and collection waits until the apps are loaded
(detectbench_web/__init__.py), a third of a second less.

    make bench   # or: pytest tests/perf/test_start_time.py -m perf -s
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter

import pytest

from tests.conftest import REPO_DIR

pytestmark = pytest.mark.perf

RUNS = 5
GOALS = {"check": 1.0, "help": 1.5}
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")


def _env() -> dict[str, str]:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "detectbench_web.settings.test"}


def _manage(*args: str, python_flags: tuple[str, ...] = ()) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, *python_flags, "manage.py", *args], cwd=REPO_DIR, env=_env(),
                            capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-3000:]
    return elapsed, result


def _imports(stderr: str) -> list[tuple[int, int, int, str]]:
    """(self µs, cumulative µs, depth, module) of each line of -X importtime."""
    rows = []
    for line in stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            rows.append((int(match[1]), int(match[2]), len(match[3]) // 2, match[4]))
    return rows


def test_start_times_are_printed():
    medians = {}
    for command in GOALS:
        _manage(command)  # a first run fills the bytecode cache
        medians[command] = statistics.median(_manage(command)[0] for _ in range(RUNS))
    print()
    for command, goal in GOALS.items():
        verdict = "OK" if medians[command] < goal else "MISSED"
        print(f"manage.py {command}: {medians[command]:.2f} s (median of {RUNS}; goal under {goal:g} s: {verdict})")

    _, traced = _manage("check", python_flags=("-X", "importtime"))
    rows = _imports(traced.stderr)
    top = sorted((r for r in rows if r[2] == 0), key=lambda r: -r[1])
    total = sum(r[1] for r in top)
    print(f"python -X importtime manage.py check: {total / 1e6:.2f} s of imports, {len(rows)} modules; "
          "the 10 largest top-level imports (cumulative):")
    for _, cumulative, _, module in top[:10]:
        print(f"  {cumulative / 1000:8.1f} ms  {module}")
    packages = Counter()
    for own, _, _, module in rows:
        packages[module.split(".")[0]] += own
    print("the 10 largest packages (their modules' own time):")
    for package, own in packages.most_common(10):
        print(f"  {own / 1000:8.1f} ms  {package}")
    heavy = {"scipy", "sklearn", "statsmodels", "matplotlib", "numpy", "openai", "rouge_score", "nltk"}
    assert not heavy & set(packages), sorted(heavy & set(packages))
