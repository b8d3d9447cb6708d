"""Sweeps: endpoints x methods over one item selection, launched from the page or the API, with the requests
(and the cost where endpoints have prices) shown before; all runs or none; nothing ticked for you."""
import re

import pytest
from django.conf import settings
from django.urls import reverse

from evaluation.models import Run
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def builtins(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=8)
    return [services.endpoint_for_cli(builtin=name) for name in ("first-option", "random", "lexical")]


def _estimate(client, query) -> str:
    return client.get(reverse("evaluation:run_launch_estimate"), query, HTTP_HX_REQUEST="true").content.decode()


def test_the_form_ticks_nothing_and_the_estimate_counts_every_pair(researcher_client, builtins):
    page = researcher_client.get(reverse("evaluation:run_launch")).content.decode()
    for name in ("endpoints", "methods"):
        assert f'name="{name}"' in page and not re.search(rf'<input[^>]*name="{name}"[^>]*checked', page), name
    ticked = researcher_client.get(reverse("evaluation:run_launch"), {"endpoint": builtins[1].pk}).content.decode()
    assert re.search(rf'<input[^>]*name="endpoints" value="{builtins[1].pk}"[^>]*checked', ticked)
    assert len(re.findall(r'<input[^>]*name="endpoints"[^>]*checked', ticked)) == 1
    assert not re.search(r'<input[^>]*name="methods"[^>]*checked', ticked)
    query = {"endpoints": [e.pk for e in builtins], "methods": ["naive", "self-consistency"], "split": "test",
             "limit": 5, "k": 3, "samples": 2, "seed": 1, "option_order": "circular"}
    fragment = _estimate(researcher_client, query)
    requests = int(re.search(r'data-requests="(\d+)"', fragment).group(1))
    assert 'data-runs="6"' in fragment
    # 5 items x 2 samples x 4 rotations x (1 + 3 calls) per endpoint, three endpoints
    assert requests == 3 * 5 * 2 * 4 * (1 + 3)
    assert all(f'data-endpoint="{e.name}"' in fragment for e in builtins)
    assert "Choose an endpoint" in _estimate(researcher_client, {**query, "endpoints": []})


def test_a_sweep_from_the_page_launches_one_run_per_pair_on_the_same_items(researcher_client, builtins,
                                                                           django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = researcher_client.post(reverse("evaluation:run_launch"), {
            "endpoints": [e.pk for e in builtins], "methods": ["naive", "self-cot"], "split": "test",
            "ids": "", "limit": 6, "seed": 7, "samples": 1, "option_order": "permuted"})
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:run_list")
    runs = list(Run.objects.order_by("pk"))
    assert len(runs) == 6 and len(callbacks) == 6 * settings.EVALUATION_WORKER_PROCESSES  # chunks per run
    assert {(r.endpoint_id, r.method) for r in runs} == {(e.pk, m) for e in builtins for m in ("naive", "self-cot")}
    assert len({tuple(r.item_ids) for r in runs}) == 1 and len(runs[0].item_ids) == 6
    assert all(r.seed == 7 and r.option_order == "permuted" for r in runs)
    assert len({r.note for r in runs}) == 1 and runs[0].note.startswith(f"sweep from #{runs[0].pk}: 3 endpoint(s)")


def test_a_sweep_is_all_or_nothing(researcher_client, builtins):
    # naive-3shot needs the train split, which is not imported: no run of the sweep is created.
    response = researcher_client.post(reverse("evaluation:run_launch"), {
        "endpoints": [e.pk for e in builtins], "methods": ["naive", "naive-3shot"], "split": "test", "seed": 1,
        "samples": 1, "option_order": "original"})
    assert response.status_code == 200 and "demonstrations" in response.content.decode()
    assert not Run.objects.exists()


def test_the_api_estimates_then_launches_the_same_sweep(api, builtins):
    priced = services.endpoint_create(name="priced", base_url="http://127.0.0.1:9/v1", model="m", max_tokens=10,
                                      price_in_per_mtok="2", price_out_per_mtok="8")
    body = {"endpoints": [builtins[0].pk, builtins[2].pk, priced.pk], "methods": ["naive", "ps-cot"],
            "split": "test", "limit": 4, "option_order": "original", "seed": 3}
    plan = api.post("/api/evaluation/sweeps/estimate/", body, format="json")
    assert plan.status_code == 200, plan.content
    plan = plan.json()
    assert plan["runs"] == 6 and plan["requests"] == 3 * 2 * 4
    assert plan["priced"] and plan["unpriced"] == [] and plan["cost_out_max"] == pytest.approx(8 * 10 * 8 / 1e6)
    by_name = {e["endpoint"]: e for e in plan["endpoints"]}
    assert by_name["priced"]["cost_in"] == pytest.approx(plan["cost_in"]) and by_name["builtin:lexical"]["builtin"]
    assert not Run.objects.exists()
    launched = api.post("/api/evaluation/sweeps/", {**body, "endpoints": body["endpoints"][:2]}, format="json")
    assert launched.status_code == 201, launched.content
    data = launched.json()
    assert data["estimate"]["requests"] == 2 * 2 * 4 and len(data["runs"]) == 4
    assert all(r["progress"]["total"] == 4 and r["seed"] == 3 for r in data["runs"])
    assert Run.objects.count() == 4


@pytest.mark.parametrize("change", [
    {"endpoints": []}, {"methods": []}, {"endpoints": [999999]}, {"methods": ["nope"]}, {"split": "nope"},
    {"methods": ["naive", "naive-3shot"]}, {"limit": 0}, {"ids": [-1]}, {"option_order": "sideways"},
])
def test_the_api_refuses_a_bad_sweep_with_a_400_and_creates_nothing(api, builtins, change):
    body = {"endpoints": [e.pk for e in builtins], "methods": ["naive"], "split": "test", **change}
    for url in ("/api/evaluation/sweeps/estimate/", "/api/evaluation/sweeps/"):
        response = api.post(url, body, format="json")
        assert response.status_code == 400, (url, response.content)
    assert not Run.objects.exists()
