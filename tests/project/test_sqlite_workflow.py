"""The annotation workflow on make run's database, SQLite: the Review stage answered 500 there (a JSON containment
lookup, `changed_fields__contains`, which SQLite does not have), so nothing could be published in the demo, while
every test passed on PostgreSQL.

The stage pages' tests (verification, the slot check and skip of every stage, review and publishing, and with them
the rule of who reviews a clue graph) are run again, in a child pytest, on an SQLite database. (The tests of concurrent hand-outs are left to
PostgreSQL: the test database of SQLite is one shared in-memory cache, locked table by table, unlike make run's file
in WAL mode.)"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR

pytestmark = pytest.mark.django_db  # not used by the child; marks it as a database test of this suite

#: The stages' pages from the hand-out to publishing (verification, every stage page's slot check and skip, review).
ON_SQLITE = ("tests/annotation/views/test_verification.py", "tests/annotation/views/test_common.py",
             "tests/annotation/views/test_review.py")


def test_the_annotation_pages_and_the_review_rule_hold_on_sqlite(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "TEST_REDIS_WORKER")) and key != "DATABASE_URL"}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", DJANGO_SETTINGS_MODULE="detectbench_web.settings.test",
               PYTHONPATH=str(REPO_DIR))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", *ON_SQLITE],
                          cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=900)
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, tail
    assert " passed" in tail and "sqlite" in env["DATABASE_URL"]
