"""The judge's REST API: configurations (with their review policy), launching and listing judge runs."""
import pytest

from annotation.models import BeliefQueue
from evaluation.execution.judge import execute_judge_run
from evaluation.models.judge import JudgeConfig, JudgeRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_configs_launch_and_list_judge_runs(researcher_client, free_text_run):
    api = "/api/evaluation/"
    response = researcher_client.post(api + "judge-configs/", {
        "name": "my-verbal", "task": "free-text", "belief_source": "verbal", "endpoint": None}, content_type="application/json")
    assert response.status_code == 400 and "endpoint" in str(response.json())  # a model judge needs an endpoint
    endpoint = free_text_run.endpoint  # a built-in baseline endpoint is no judge endpoint either
    response = researcher_client.post(api + "judge-configs/", {
        "name": "my-verbal", "task": "free-text", "belief_source": "verbal", "endpoint": endpoint.pk},
        content_type="application/json")
    assert response.status_code == 400

    response = researcher_client.post(api + "judge-runs/", {"config": "builtin", "run": free_text_run.pk},
                                      content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["config"], body["task"], body["status"], body["target_run"]) == (
        "builtin", "free-text", "queued", free_text_run.pk)
    execute_judge_run(judge_run_id=body["id"])  # what the worker does with the queued task
    detail = researcher_client.get(api + f"judge-runs/{body['id']}/").json()
    assert detail["status"] == "finished" and detail["scored"] + detail["unscored"] == detail["n"] > 0

    configs = researcher_client.get(api + "judge-configs/").json()
    rows = configs["results"] if isinstance(configs, dict) else configs
    [builtin] = [c for c in rows if c["name"] == "builtin"]
    assert (builtin["belief_source"], builtin["queue"], builtin["review_order"], builtin["run_count"]) == (
        "builtin", "builtin", "triage", 1)
    assert BeliefQueue.objects.get(name="builtin").judge_config == JudgeConfig.objects.get(name="builtin")

    listed = researcher_client.get(api + f"judge-runs/?run={free_text_run.pk}").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["id"] for r in rows] == [body["id"]]

    run = researcher_client.get(api + f"runs/{free_text_run.pk}/").json()
    [judged] = run["judged_accuracy"]
    assert judged["config"] == "builtin" and judged["scored"] == detail["scored"]
    assert judged["unscored_share"] == pytest.approx(
        (judged["n"] - judged["scored"] - judged["unanswered"]) / judged["n"])

    refused = researcher_client.post(api + "judge-runs/", {"config": "builtin", "split": "test"},
                                     content_type="application/json")
    assert refused.status_code == 400  # the built-in judge needs the task with a split
    assert researcher_client.post(api + "judge-runs/", {"config": "nope", "split": "test", "task": "screening"},
                                  content_type="application/json").status_code == 404
    assert researcher_client.post(api + f"judge-runs/{body['id']}/cancel/").status_code == 409
    resumed = researcher_client.post(api + f"judge-runs/{body['id']}/resume/").json()
    assert resumed["status"] == "queued" and JudgeRun.objects.count() == 1


def test_annotators_cannot_use_the_judge_api(annotator_client):
    assert annotator_client.get("/api/evaluation/judge-configs/").status_code == 403
    assert annotator_client.post("/api/evaluation/judge-runs/", {"config": "builtin"}).status_code == 403
