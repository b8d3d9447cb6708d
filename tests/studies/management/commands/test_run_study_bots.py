"""The rehearsal tool `run_study_bots` as a researcher runs it: its own process, the production pool setting."""
import io
import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db.models import Sum

from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus, Response, StudyItem, StudyStatus
from studies.services import study_create
from tests.conftest import REPO_DIR, subprocess_env
from tests.studies.conftest import import_items

pytestmark = pytest.mark.django_db(transaction=True)


def _bots(live_server, slug: str, *args: str) -> dict:
    """`manage.py run_study_bots` in a child process with Django's connection pool on (10 connections)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "run_study_bots", "--study", slug, "--base-url", live_server.url, *args],
        cwd=REPO_DIR, env=subprocess_env(DATABASE_POOL="1", DATABASE_POOL_MAX="10"), capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_sixty_bots_at_concurrency_sixty_get_a_pool_that_fits_and_all_finish(live_server, detectbench_dir):
    ids = import_items(detectbench_dir, 40)
    study = study_create(slug="rehearse60", item_ids=ids, status=StudyStatus.OPEN, per_participant=2, raters=3,
                         time_limit_seconds=900, completion_code="R60")
    summary = _bots(live_server, study.slug, "--participants", "60", "--concurrency", "60", "--accuracy", "0.7",
                       "--json")
    print("\n60 bots, concurrency 60:", {k: summary.get(k) for k in ("outcomes", "database_pool", "wall_seconds")})
    assert summary["outcomes"] == {"complete": 60}, summary["errors"]
    assert summary["database_pool"] >= 61  # every bot thread and the command's own
    assert summary["unfinished"] == [] and summary["released"] == 0
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == 60
    responses = Response.objects.filter(attempt__study=study)
    assert responses.count() == 120
    assert 0.45 <= responses.filter(is_correct=True).count() / 120 <= 0.95  # --accuracy 0.7 from the oracle
    assert not Attempt.objects.filter(study=study, status=AttemptStatus.STARTED).exists()


def test_bots_that_leave_early_are_reported_and_their_attempts_returned(live_server, detectbench_dir):
    ids = import_items(detectbench_dir, 12)
    study = study_create(slug="leave-early", item_ids=ids, status=StudyStatus.OPEN, per_participant=3, raters=2,
                         time_limit_seconds=900, completion_code="LE")
    out = io.StringIO()  # in this process: what is returned does not depend on the pool
    call_command("run_study_bots", "--study", study.slug, "--base-url", live_server.url, "--participants", "4",
                 "--concurrency", "4", "--stop-after", "1", "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["outcomes"] == {"stopped": 4}
    assert summary["released"] == 4 and len(summary["unfinished"]) == 4
    assert {(u["outcome"], u["answered"], u["released"]) for u in summary["unfinished"]} == {("stopped", 1, True)}
    attempts = Attempt.objects.filter(study=study)
    assert set(attempts.values_list("status", flat=True)) == {AttemptStatus.RETURNED}
    # Their unanswered items are back in the pool now, not at the deadline: the load is the answers alone.
    assert StudyItem.objects.filter(study=study).aggregate(n=Sum("load"))["n"] == 4
    assert not attempts.filter(leases__status=ParticipantLeaseStatus.ACTIVE).exists()

    out = io.StringIO()  # the report of attempts left running on purpose
    call_command("run_study_bots", "--study", study.slug, "--base-url", live_server.url, "--participants", "2",
                 "--stop-after", "1", "--keep-unfinished", "--id-prefix", "dropout", stdout=out)
    text = out.getvalue()
    assert "unfinished: 2 attempts, 0 returned, 2 still running (--keep-unfinished)" in text
    assert "dropout-0000: stopped after 1 answers, still running" in text
    assert attempts.filter(status=AttemptStatus.STARTED).count() == 2
