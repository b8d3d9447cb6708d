"""annotation.keyinfo: ROUGE-L KeyInfo, and its scorer built at a worker's start rather than at a run's first row."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_DIR


def test_a_worker_start_builds_the_scorer_so_no_run_waits_for_its_import():
    """In a fresh process: nothing imports rouge-score until the worker-start hook runs, then the scorer is built
    once and a score needs no further import."""
    script = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.test');"
        "django.setup();"
        "from annotation import keyinfo; assert 'rouge_score' not in sys.modules, 'imported at module load';"
        "from evaluation.tasks import import_model_sdk; import_model_sdk();"
        "assert keyinfo._scorer.cache_info().currsize == 1;"
        "before = set(sys.modules);"
        "print(round(keyinfo.keyinfo_score('the butler had mud on his boots', 'mud on the boots'), 4));"
        "print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    score, new_modules = out.stdout.strip().splitlines()
    assert float(score) > 0.5
    assert new_modules == "[]"
