"""The judge page of the dashboard: launch a judge run, see configurations and runs; refusals as form errors."""
import pytest

from evaluation.forms.analysis import run_choice_label
from evaluation.models.judge import JudgeRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_launch_from_the_dashboard_and_see_the_run(researcher_client, free_text_run):
    run_page = researcher_client.get(f"/evaluation/runs/{free_text_run.pk}/").content.decode()
    assert f"/evaluation/judge/?run={free_text_run.pk}" in run_page
    page = researcher_client.get(f"/evaluation/judge/?run={free_text_run.pk}")
    assert page.status_code == 200 and "No judge runs yet." in page.content.decode()

    response = researcher_client.post("/evaluation/judge/", {"config": "builtin", "run": free_text_run.pk})
    assert response.status_code == 302
    judge_run = JudgeRun.objects.get()
    assert (judge_run.task, judge_run.target_run_id, judge_run.status) == ("free-text", free_text_run.pk, "queued")
    page = researcher_client.get("/evaluation/judge/").content.decode()
    # Named by the judge and the run it judged (method, model, ...), not by ids; polled while queued.
    assert f"builtin on {run_choice_label(free_text_run)}" in page and 'hx-trigger="every 2s"' in page
    partial = researcher_client.get("/evaluation/judge/", headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith('<div id="judge-runs"')

    refused = researcher_client.post("/evaluation/judge/", {"config": "builtin", "split": "test"})
    assert refused.status_code == 200 and "the task is one of" in refused.content.decode()
    missing = researcher_client.post("/evaluation/judge/", {"config": "nope", "split": "test", "task": "screening"})
    assert missing.status_code == 200 and "no judge configuration" in missing.content.decode()
    assert JudgeRun.objects.count() == 1


def test_annotators_do_not_reach_the_judge_page(annotator_client):
    assert annotator_client.get("/evaluation/judge/").status_code in (302, 403)

