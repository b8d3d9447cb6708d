"""The house's rules (DESIGN.md "Shape"), kept by well-kept tools: import-linter's contracts (pyproject.toml:
the floors, the pure packages, the layers inside evaluation) and ruff; what those cannot say is tested here."""
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_DIR

PACKAGES = ("foundation", "annotation", "studies", "evaluation", "detectbench_web")
BIN = Path(sys.executable).parent
#: No module of the apps grows past this many lines before it is split by sub-domain (issue 17).
MAX_MODULE_LINES = 400


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PATH": str(BIN), "PYTHONPATH": str(cwd)})


def test_every_import_contract_is_kept():
    result = _lint_imports(REPO_DIR)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


def test_breaking_a_contract_on_purpose_fails(tmp_path):
    """A copy of the code with a wrong-way import and Django in a pure package: lint-imports fails naming both."""
    for package in PACKAGES:
        shutil.copytree(REPO_DIR / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "templates", "static", "locale"))
    shutil.copy(REPO_DIR / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "annotation" / "wrong_way.py").write_text("def f():\n    from evaluation.models import Run\n")
    (tmp_path / "evaluation" / "statistics" / "impure.py").write_text("from django.db import models\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "annotation.wrong_way -> evaluation.models" in result.stdout
    assert "evaluation.statistics.impure -> django" in result.stdout


def test_ruff_is_clean():
    result = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "."], cwd=REPO_DIR, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]


def test_no_module_of_the_apps_is_over_the_line_limit():
    long = []
    for package in PACKAGES:
        for path in (REPO_DIR / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_MODULE_LINES:
                long.append(f"{path.relative_to(REPO_DIR)}: {lines} lines")
    assert not long, "split by sub-domain:\n" + "\n".join(long)
