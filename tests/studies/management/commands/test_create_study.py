"""create_study and run_study_bots (real HTTP against a live server)."""
import io
import json

import pytest
from django.core.management import call_command

from studies.models import Attempt, AttemptStatus, Response, Study, StudyStatus
from tests.studies.conftest import import_items


@pytest.mark.django_db(transaction=True)
def test_create_study_then_bots_with_accuracy(live_server, detectbench_dir):
    import_items(detectbench_dir, 40)
    out = io.StringIO()
    call_command("create_study", "--slug", "rehearsal", "--split", "test", "--sample", "30", "--seed", "3",
                 "--per-participant", "5", "--raters", "2", "--time-limit", "900", "--completion-code", "RH-1",
                 stdout=out)
    assert "12 complete attempts" in out.getvalue()
    study = Study.objects.get(slug="rehearsal")
    assert study.pool.count() == 30 and study.status == StudyStatus.OPEN
    out = io.StringIO()
    call_command("run_study_bots", "--study", "rehearsal", "--participants", "6", "--concurrency", "3",
                 "--accuracy", "1.0", "--base-url", live_server.url, "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["outcomes"] == {"complete": 6}
    assert Attempt.objects.filter(study=study, status=AttemptStatus.FINISHED).count() == 6
    responses = Response.objects.filter(attempt__study=study)
    assert responses.count() == 30 and all(r.is_correct for r in responses)
    assert all(r.highlights for r in responses)
