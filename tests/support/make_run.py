"""The database `make run` builds (scripts/run.sh), for tests that start where a newcomer starts."""
from __future__ import annotations

import importlib
import io

from django.apps import apps
from django.core.management import call_command

from tests.conftest import REPO_DIR

RUN_SH = REPO_DIR / "scripts" / "run.sh"
DEMO_PASSWORDS = {"researcher": "researcher-demo", "annotator": "annotator-demo", "annotator2": "annotator-demo"}
# Lines of scripts/run.sh that make_run_database() repeats; a test fails when run.sh no longer has them.
RUN_SH_LINES = ("manage.py setup_demo --runs worker",)


# The data migrations that write rows (the others only backfill existing rows).
ROW_MIGRATIONS = (("annotation.migrations.0002_roles", "create_groups"),
                  ("annotation.migrations.0004_stage_config_defaults", "seed"))


def migrated_rows() -> None:
    """The rows `migrate` writes (role groups, stage settings), which a transactional test's flush removed.

    Preferred to serialized_rollback: a flush by an earlier transactional test re-creates content types under
    new ids, and restoring the serialized ones then collides with them.
    """
    for module, function in ROW_MIGRATIONS:
        getattr(importlib.import_module(module), function)(apps, None)


def make_run_database() -> None:
    """What scripts/run.sh sets up in a fresh (migrated) database: its one command, `setup_demo`.

    run.sh hands the model and judge runs to the worker it starts; here they run in this process (no worker
    needed), and static files are not collected (the test settings serve them from the apps).
    Call it where no event loop runs (not inside Playwright's sync API): `evaluate` runs one.
    """
    migrated_rows()
    call_command("setup_demo", "--runs", "here", "--no-static", stdout=io.StringIO())
