"""REST API parity: the leaderboard and the two-run comparison as on the pages and the command, researchers only,
refusals as 400, in the OpenAPI schema, a bounded number of queries."""
import json
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.models import Item
from annotation.services import item_update
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=25)
    made = []
    for model in ("first-option", "lexical", "random"):
        for method in ("naive", "self-cot"):
            made.append(compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model),
                                                    method=method, split="test", enqueue=False)))
    return made


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.force_authenticate(researcher)
    return client


def test_leaderboard_api_equals_the_selector_and_refuses_a_mix(api, runs):
    reference = "naive@builtin:lexical"
    response = api.get("/api/evaluation/leaderboard/", {"split": "test", "reference": reference})
    assert response.status_code == 200
    expected = json.loads(json.dumps(leaderboard(split="test", reference=reference).as_json()))
    assert response.json() == expected
    cells = response.json()["cells"]
    assert len(cells) == 6 and all(c["n"] == 25 and len(c["accuracy_ci95"]) == 2 for c in cells)
    assert sum(c["is_reference"] for c in cells) == 1 and all(
        c["p_holm"] is not None for c in cells if not c["is_reference"])
    assert api.get("/api/evaluation/leaderboard/").status_code == 400
    bad = api.get("/api/evaluation/leaderboard/", {"split": "test", "reference": "x@y"})
    assert bad.status_code == 400 and "x@y" in json.dumps(bad.json())
    assert api.get("/api/evaluation/leaderboard/", {"runs": "1,a"}).status_code == 400
    chosen = api.get("/api/evaluation/leaderboard/", {"runs": f"{runs[0].pk},{runs[2].pk}"}).json()
    assert chosen["common"] is True and chosen["common_items"] == 25


def test_compare_api_and_roles(api, runs, annotator):
    a, b = runs[0], runs[2]
    data = api.get("/api/evaluation/compare/", {"a": a.pk, "b": b.pk}).json()
    assert data["pairs"] == 25 and sum(sum(row) for row in data["table"]) == 25
    assert len(data["differing"]) == sum(data["discordant"])
    assert api.get("/api/evaluation/compare/", {"a": a.pk, "b": a.pk}).status_code == 400
    assert api.get("/api/evaluation/compare/", {"a": a.pk, "b": 999999}).status_code == 404
    assert api.get("/api/evaluation/compare/", {"a": "x"}).status_code == 400
    other = APIClient()
    other.force_authenticate(annotator)
    assert other.get("/api/evaluation/leaderboard/", {"split": "test"}).status_code == 403
    assert other.get("/api/evaluation/compare/", {"a": a.pk, "b": b.pk}).status_code == 403


@pytest.mark.parametrize("seed", range(2))
def test_compare_api_leaves_out_the_deleted_items_the_leaderboard_api_leaves_out(api, runs, seed):
    rng = random.Random(seed)
    items = list(Item.objects.filter(split="test").order_by("pk"))
    for item in rng.sample(items, rng.randint(1, 5)):
        item_update(item_id=item.pk, base_version=item.version, changes={}, status="rejected", note="deleted")
    gone = Item.objects.filter(status="rejected").count()
    a, b = rng.sample(runs, 2)
    data = api.get("/api/evaluation/compare/", {"a": a.pk, "b": b.pk}).json()
    chosen = api.get("/api/evaluation/leaderboard/", {"runs": f"{a.pk},{b.pk}"}).json()
    assert data["pairs"] == chosen["common_items"] == 25 - gone
    assert data["rejected_items"] == chosen["rejected_items"] == gone
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "rejected_items" in schema["components"]["schemas"]["RunComparison"]["properties"]


def test_both_are_in_the_openapi_schema(researcher_client):
    schema = researcher_client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in ("/api/evaluation/leaderboard/", "/api/evaluation/compare/"):
        assert f'"{path}"' in schema
    assert '"LeaderboardCell"' in schema and '"p_holm"' in schema and '"RunComparison"' in schema


def test_query_counts_do_not_grow_with_cells(api, runs, compute):
    def count(params):
        with CaptureQueriesContext(connection) as ctx:
            assert api.get("/api/evaluation/leaderboard/", params).status_code == 200
        return len(ctx.captured_queries)

    params = {"split": "test", "reference": "naive@builtin:lexical"}
    assert api.get("/api/evaluation/endpoints/").status_code == 200  # the role check caches the user's groups
    # Cold: runs, the split's rejected items, item state, every cell's rows (one pass), the baselines' rows per item
    # (item state, one pass: evaluation.selectors.baselines), humans.
    cold = count(params)
    warm = count(params)  # finished runs' counts and baseline items come from the cache: no pass over the rows
    assert (cold, warm) == (7, 5), (cold, warm)
    for method in ("ps-cot", "detective-thinking"):
        compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method=method,
                                    split="test", enqueue=False))
    assert (count(params), count(params)) == (cold, warm)  # the new cells are counted once, in one query


@pytest.mark.parametrize("params", [
    {"split": "x" * 41}, {"split": "test", "option_order": "sideways"}, {"split": "test", "common": "maybe"},
    {"runs": "0"}, {"runs": ",".join(["1"] * 6000)}, {"runs": "999999"}, {"split": "test", "reference": "é@\x00"},
    {"split": "nosuchsplit"}, {"split": "test", "reference": "@"},
])
def test_odd_queries_are_refused_or_answered_never_a_server_error(api, runs, params):
    response = api.get("/api/evaluation/leaderboard/", params)
    assert response.status_code in (200, 400), (params, response.status_code, response.content[:300])


@pytest.mark.parametrize("params", [{"a": 0, "b": 1}, {"a": "1", "b": "x"}, {"a": 2**40, "b": 1}, {}])
def test_odd_comparisons_are_refused(api, runs, params):
    assert api.get("/api/evaluation/compare/", params).status_code in (400, 404)
