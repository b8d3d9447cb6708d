"""Researcher pages and API: role checks, pages render with metrics and figures, launch / cancel / resume."""
import asyncio
import re

import pytest
from django.conf import settings
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.execution import chunks as execution
from evaluation.execution.planning import JobPlanner
from evaluation.model_calls.engine import Engine
from evaluation.models import ModelEndpoint, Result, Run, RunStatus
from evaluation.prompting.methods import get_method
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(detectbench_dir, django_capture_on_commit_callbacks):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=30)
    endpoint = services.endpoint_for_cli(builtin="first-option")
    run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
    # Compute the rows on this thread (the test transaction is not visible to the executor's DB thread).
    jobs = JobPlanner.for_run(run).jobs([(item_id, 0) for item_id in run.item_ids])
    found = []
    engine = Engine(method=get_method("naive"), client=execution.make_client(endpoint, seed=run.seed), concurrency=4)
    asyncio.run(engine.run(jobs, on_result=found.append))
    execution._write(run, found, endpoint.model, set())
    execution.refresh_status(run.pk)
    run.refresh_from_db()
    return run


PAGES = [("evaluation:run_list", None), ("evaluation:endpoint_list", None), ("evaluation:run_launch", None),
         ("evaluation:leaderboard", None), ("evaluation:run_compare", None), ("evaluation:run_detail", "run")]


def _url(name, arg, run):
    return reverse(name, args=[run.pk]) if arg else reverse(name)


def test_pages_refuse_anonymous_annotators_and_plain_users(client, annotator, plain_user, finished_run):
    for name, arg in PAGES:
        response = client.get(_url(name, arg, finished_run))
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], name
    for user in (annotator, plain_user):
        client.force_login(user)
        for name, arg in PAGES:
            assert client.get(_url(name, arg, finished_run)).status_code == 403, (name, user)
        assert client.post(reverse("evaluation:run_cancel", args=[finished_run.pk])).status_code == 403
    assert Run.objects.get(pk=finished_run.pk).status == RunStatus.FINISHED


def test_researcher_pages_show_metrics_breakdown_and_svg_figures(researcher_client, finished_run, django_assert_max_num_queries):
    with django_assert_max_num_queries(12):
        page = researcher_client.get(reverse("evaluation:run_detail", args=[finished_run.pk]))
    html = page.content.decode()
    correct = Result.objects.filter(run=finished_run, is_correct=True).count()
    assert page.status_code == 200
    assert f"{correct}/30" in html and "always-first-option baseline" in html and "KeyInfo" in html
    assert "<svg" in html and "always first option" in html and "By question type" in html
    # No CDN: read without the page's random 64-character CSRF tokens, which spell "cdn" about once in 480 pages.
    assert "cdn" not in re.sub(r"[A-Za-z0-9]{64}", "", html).lower()
    partial = researcher_client.get(reverse("evaluation:run_detail", args=[finished_run.pk]) + "?part=results&status=wrong",
                                    HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and "<html" not in partial.content.decode()
    with django_assert_max_num_queries(10):
        runs = researcher_client.get(reverse("evaluation:run_list"))
    assert f"#{finished_run.pk}" in runs.content.decode() and "30/30" in runs.content.decode()
    compare = researcher_client.get(reverse("evaluation:leaderboard") + "?split=test").content.decode()
    assert "Naive Questioning" in compare and "KeyInfo." in compare and "<svg" in compare
    nav = researcher_client.get(reverse("home")).content.decode()
    assert reverse("evaluation:run_list") in nav


def test_active_run_progress_polls_with_htmx(researcher_client, detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=5)
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="random"), method="naive", split="test",
                              enqueue=False)
    html = researcher_client.get(reverse("evaluation:run_list")).content.decode()
    assert 'hx-trigger="every 2s"' in html
    part = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk]) + "?part=progress", HTTP_HX_REQUEST="true")
    assert "0/5" in part.content.decode() and 'hx-trigger="every 2s"' in part.content.decode()


def test_endpoint_create_and_launch_forms(researcher_client, detectbench_dir, django_capture_on_commit_callbacks):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=5)
    response = researcher_client.post(reverse("evaluation:endpoint_list"), {
        "name": "local vllm", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "llama",
        "api_key_env": "VLLM_KEY", "max_concurrency": 16, "timeout_s": 60, "max_attempts": 6, "use_cache": "on",
        "table9_preset": "on",
    })
    assert response.status_code == 302
    endpoint = ModelEndpoint.objects.get(name="local vllm")
    assert (endpoint.temperature, endpoint.top_p, endpoint.max_tokens) == (0.95, 0.95, 2000)
    bad = researcher_client.post(reverse("evaluation:endpoint_list"), {
        "name": "bad", "kind": "openai", "base_url": "http://x/v1", "model": "m", "api_key_env": "sk-abc 123",
        "max_concurrency": 1, "timeout_s": 60, "max_attempts": 1})
    assert bad.status_code == 200 and not ModelEndpoint.objects.filter(name="bad").exists()
    launch = {"endpoint": endpoint.pk, "methods": ["naive", "self-cot"], "split": "test", "seed": 3, "samples": 1,
              "option_order": "permuted"}
    # Nothing listens on port 9: the endpoint check refuses the launch, names why, and launches nothing.
    with django_capture_on_commit_callbacks() as callbacks:
        refused = researcher_client.post(reverse("evaluation:run_launch"), launch)
    assert refused.status_code == 200 and not callbacks and not Run.objects.exists()
    assert "cannot serve a run" in refused.content.decode() and "connection refused" in refused.content.decode()
    with django_capture_on_commit_callbacks() as callbacks:
        response = researcher_client.post(reverse("evaluation:run_launch"), {**launch, "no_preflight": "on"})
    assert response.status_code == 302
    runs = Run.objects.filter(endpoint=endpoint)
    assert runs.count() == 2 and all(r.option_order == "permuted" and len(r.item_ids) == 5 for r in runs)
    assert len(callbacks) == 2 * settings.EVALUATION_WORKER_PROCESSES  # a chunk per worker process and run, on commit


def test_api_role_checks_and_launch_cancel_resume(researcher, annotator, detectbench_dir, django_capture_on_commit_callbacks):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=5)
    api = APIClient()
    assert api.get("/api/evaluation/runs/").status_code in (401, 403)
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator).key}")
    assert api.get("/api/evaluation/runs/").status_code == 403
    assert api.post("/api/evaluation/endpoints/", {"name": "x", "model": "m"}).status_code == 403
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    created = api.post("/api/evaluation/endpoints/", {"name": "b", "kind": "builtin", "model": "lexical"}, format="json")
    assert created.status_code == 201, created.content
    preset = api.post("/api/evaluation/endpoints/", {"name": "t9", "kind": "builtin", "model": "lexical",
                                                     "temperature": 0.1, "table9_preset": True}, format="json")
    assert preset.status_code == 201 and (preset.data["temperature"], preset.data["max_tokens"]) == (0.95, 2000)
    assert api.get(f"/api/evaluation/endpoints/{preset.data['id']}/").data["seed"] == 42
    bad = api.post("/api/evaluation/endpoints/", {"name": "c", "kind": "builtin", "model": "gpt"}, format="json")
    assert bad.status_code == 400
    with django_capture_on_commit_callbacks():
        launched = api.post("/api/evaluation/runs/", {"endpoint": created.data["id"], "method": "naive", "split": "test"},
                            format="json")
    assert launched.status_code == 201 and launched.data["progress"]["total"] == 5
    run_id = launched.data["id"]
    assert api.post(f"/api/evaluation/runs/{run_id}/cancel/").data["status"] == "cancelled"
    with django_capture_on_commit_callbacks():
        assert api.post(f"/api/evaluation/runs/{run_id}/resume/").data["status"] == "queued"
    detail = api.get(f"/api/evaluation/runs/{run_id}/")
    assert detail.status_code == 200 and "metrics" in detail.data and detail.data["metrics"]["n"] == 0
    assert api.get(f"/api/evaluation/runs/{run_id}/results/").status_code == 200
    assert api.get("/api/evaluation/runs/").data["count"] == 1


def test_resuming_a_complete_run_keeps_it_finished(researcher, finished_run, django_capture_on_commit_callbacks):
    """Nothing is missing: no chunk is queued, so the run must not wait in the queue for ever."""
    api = APIClient()
    api.force_authenticate(researcher)
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(f"/api/evaluation/runs/{finished_run.pk}/resume/")
    assert response.status_code == 200 and response.data["status"] == "finished"
    assert callbacks == []
    finished_run.refresh_from_db()
    assert finished_run.status == RunStatus.FINISHED and finished_run.finished_at is not None


def test_resume_requeues_only_failed_and_missing_items(finished_run, django_capture_on_commit_callbacks, settings):
    settings.EVALUATION_WORKER_PROCESSES = 1
    failed, missing = finished_run.item_ids[3], finished_run.item_ids[7]
    Result.objects.filter(run=finished_run, item_id=failed).update(error="HTTP 500")
    Result.objects.filter(run=finished_run, item_id=missing).delete()
    with django_capture_on_commit_callbacks() as callbacks:
        run = services.run_resume(run=finished_run)
    assert run.status == RunStatus.QUEUED and run.finished_at is None
    assert len(callbacks) == 1  # one chunk, of the two items
    assert services.missing_item_ids(run) == sorted([failed, missing], key=run.item_ids.index)
