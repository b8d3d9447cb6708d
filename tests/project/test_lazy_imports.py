"""Fast start (issue 17): loading the apps and every URL imports none of the heavy libraries.

scipy, scikit-learn, statsmodels, matplotlib, numpy, the openai SDK, rouge-score (and its nltk) are imported
inside the functions that use them (annotation.trust, annotation.keyinfo, evaluation.statistics, evaluation.figures,
evaluation.model_calls.clients and preflight), so that `manage.py check`, every management command, every web and
Celery process starts without them; the first figure, statistic, KeyInfo score or model request of a process
pays for its own. Celery workers import the model SDK at start (evaluation.tasks.import_model_sdk).
`make bench` prints the times (tests/perf/test_start_time.py).
"""
import os
import subprocess
import sys

from tests.conftest import REPO_DIR

#: Libraries that cost a tenth of a second or more to import, none of which URL loading needs.
HEAVY = ("scipy", "sklearn", "statsmodels", "matplotlib", "openai", "numpy", "pandas", "rouge_score", "nltk",
         "httpx", "httpx2", "aiohttp")

PROBE = (
    "import django; django.setup(); from django.urls import get_resolver; get_resolver().url_patterns; "
    "import sys; print(sorted(m for m in {heavy!r} if m in sys.modules))"
)


def _loaded_after(code: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "detectbench_web.settings.test"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return eval(result.stdout.strip().splitlines()[-1])  # a list of names printed by the probe


def test_loading_the_apps_and_every_url_imports_no_heavy_library():
    assert _loaded_after(PROBE.format(heavy=HEAVY)) == []


def test_the_heavy_libraries_come_with_their_first_use():
    """The probe can tell: the functions that need them do import them."""
    code = PROBE.format(heavy=HEAVY).replace(
        "import sys;",
        "from annotation.trust import accuracy; accuracy([True, False]); "
        "from evaluation.model_calls.clients import import_sdk; import_sdk(); import sys;")
    assert {"numpy", "statsmodels", "openai", "httpx2"} <= set(_loaded_after(code))


def test_garbage_collection_is_back_on_once_django_has_started():
    """detectbench_web turns the collector off while a process starts and on again when the apps are loaded."""
    code = ("import gc, detectbench_web; off = not gc.isenabled(); import django; django.setup(); "
            "print([off, gc.isenabled(), gc.get_freeze_count() > 100_000])")
    assert _loaded_after(code) == [True, True, True]
