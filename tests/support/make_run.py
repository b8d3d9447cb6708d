"""The database `make run` builds (scripts/run.sh), for tests that start where a newcomer starts."""
from __future__ import annotations

import importlib

from django.apps import apps
from django.core.management import call_command

from tests.conftest import REPO_DIR

RUN_SH = REPO_DIR / "scripts" / "run.sh"
DEMO_PASSWORDS = {"researcher": "researcher-demo", "annotator": "annotator-demo", "annotator2": "annotator-demo"}
# Lines of scripts/run.sh that make_run_database() repeats; a test fails when run.sh no longer has them.
RUN_SH_LINES = (
    "manage.py load_sample_data", "manage.py create_demo_accounts",
    "--time-limit 1800 --status open --completion-code DEMO2026 --timeout-code DEMO2026-TIMEOUT",
    "--method naive,detective-thinking --split test --in-process --wait --no-progress",
    "for model in first-option lexical random",
)


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
    """What scripts/run.sh does to a fresh (migrated) database, with the same commands and arguments.

    Call it where no event loop runs (not inside Playwright's sync API): `evaluate` runs one.
    """
    migrated_rows()
    call_command("load_sample_data")
    call_command("create_demo_accounts")
    call_command("create_study", "--slug", "demo", "--title", "Demo study", "--split", "test",
                 "--per-participant", "5", "--raters", "3", "--time-limit", "1800", "--status", "open",
                 "--completion-code", "DEMO2026", "--timeout-code", "DEMO2026-TIMEOUT")
    for model in ("first-option", "lexical", "random"):
        call_command("evaluate", "--builtin", model, "--method", "naive,detective-thinking", "--split", "test",
                     "--in-process", "--wait", "--no-progress")
