"""The design, kept true: imports point one way between the apps, and pure modules stay free of Django."""
import importlib.util
import textwrap

from tests.conftest import REPO_DIR
from tests.support import architecture

#: Plain-Python modules (DESIGN.md convention 3): importable and testable without Django.
PURE = (
    "annotation.text",
    "annotation.keyinfo",
    "annotation.clue_graph",
    "annotation.agreement",
    "annotation.diffing",
    "annotation.trust",
    "annotation.review_order",
    "evaluation.prompting.answer_reading",
    "evaluation.prompting.methods",
    "evaluation.prompting.scoring",
    "evaluation.statistics.paired",
    "evaluation.statistics.metrics",
    "evaluation.prompting.prompts",
    "evaluation.prompting.circular",
    "evaluation.figures.data",
    "evaluation.statistics.quality_checks",
    "evaluation.model_calls.launch_estimate",
    "evaluation.judge.parsing",
    "evaluation.judge.beliefs",
    "evaluation.judge.specs",
    "evaluation.judge.templates",
    "evaluation.judge.builtin",
    "evaluation.judge.drafts",
    "studies.allocation",
    "studies.stats",
)


def test_apps_import_one_way_and_pure_modules_import_no_django():
    violations = architecture.check(REPO_DIR, pure=PURE)
    assert not violations, "\n".join(map(str, violations))


def test_every_declared_pure_module_exists():
    missing = [name for name in PURE if importlib.util.find_spec(name) is None]
    assert not missing, f"declared pure but not found (renamed? update PURE): {missing}"


def _tree(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for app in ("annotation", "studies", "evaluation"):
        (tmp_path / app).mkdir(exist_ok=True)
        (tmp_path / app / "__init__.py").touch()
    return tmp_path


def test_checker_catches_a_wrong_way_import_at_top_or_inside_a_function(tmp_path):
    root = _tree(tmp_path, {
        "annotation/services.py": "from evaluation.models import Run\n",
        "studies/views.py": "def f():\n    from evaluation import selectors\n",
        "evaluation/services.py": "from studies.models import Response\nfrom annotation.models import Item\n",
    })
    found = sorted(str(v) for v in architecture.check(root))
    assert found == [
        "annotation.services:1: imports evaluation.models (annotation must not import evaluation)",
        "studies.views.researchers:2: imports evaluation (studies must not import evaluation)",
    ]


def test_checker_catches_django_in_a_pure_module_and_resolves_relative_imports(tmp_path):
    root = _tree(tmp_path, {
        "annotation/text.py": "import re\n",
        "annotation/clue_graph/__init__.py": "from .parse import x\n",
        "annotation/clue_graph/parse.py": "from ..text import tokens\nfrom django.db import models\n",
        "annotation/clue_graph/render.py": "from ..models import Item\n",
        "annotation/models.py": "from django.db import models\n",
    })
    found = sorted(str(v) for v in architecture.check(root, pure=("annotation.text", "annotation.clue_graph")))
    assert found == [
        "annotation.clue_graph.parse:2: imports django.db (a pure module must not import Django)",
        "annotation.clue_graph.render:1: imports annotation.models (a pure module imports only pure modules)",
    ]
