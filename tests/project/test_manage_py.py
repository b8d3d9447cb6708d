"""manage.py: a command whose reader goes away (`export_items | head`) stops quietly, without a traceback."""
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR, subprocess_env
from tests.support.items import import_items

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_command_piped_into_a_reader_that_stops_early_ends_without_a_traceback(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=150)  # ~300 KB of JSONL: more than a pipe holds
    command = subprocess.Popen([sys.executable, "manage.py", "export_items", "--split", "test"], cwd=REPO_DIR,
                               env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert command.stdout.read(100)  # the reader takes a little and goes away, as `head -c 100` does
    command.stdout.close()
    _, errors = command.communicate(timeout=120)
    assert "Traceback" not in errors.decode() and "BrokenPipeError" not in errors.decode(), errors.decode()[-2000:]
    assert command.returncode == 1
