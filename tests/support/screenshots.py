"""Full-page screenshots kept as test artefacts (var/test-artifacts/NAME/, or $TEST_ARTIFACTS_DIR/NAME/)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.conftest import REPO_DIR


def artifacts_dir(name: str) -> Path:
    """Where a browser test keeps its screenshots (replaced on each run, untracked)."""
    return Path(os.environ.get("TEST_ARTIFACTS_DIR", REPO_DIR / "var" / "test-artifacts")) / name


class Shots:
    """Full-page screenshots, numbered in the order taken."""

    def __init__(self, directory: Path):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        self.directory, self.n = directory, 0

    def __call__(self, page, name: str) -> None:
        self.n += 1
        page.screenshot(path=str(self.directory / f"{self.n:02d}-{name}.png"), full_page=True)
