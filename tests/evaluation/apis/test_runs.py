"""evaluation.apis.runs: a result row says the content version it was asked at, the item's version now and whether
it is stale (in the OpenAPI schema too); a refresh asks the stale rows again and is refused (409, never a 500)
while the run is still running; the rows a refresh superseded are listed whole, to researchers only."""
import pytest

from annotation.models import Item
from annotation.services import item_update
from evaluation.models import Result, Run, RunStatus, SupersededResult
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db(transaction=True)


def test_results_say_their_version_and_staleness_and_a_refresh_brings_them_up_to_date(api, sample_items):
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              enqueue=False)
    refused = api.post(f"/api/evaluation/runs/{run.pk}/refresh/")
    assert refused.status_code == 409 and refused.json()["code"] == "run_active"
    services.run_execute_in_process(run=run)
    item = sample_items[0]
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Why?"})
    rows = api.get(f"/api/evaluation/runs/{run.pk}/results/", {"page_size": 100}).json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    by_item = {r["item"]: r for r in rows}
    assert (by_item[item.pk]["item_version"], by_item[item.pk]["current_version"], by_item[item.pk]["stale"]) == (1, 2, True)
    assert all(not r["stale"] and r["item_version"] == r["current_version"] == 1 for r in rows if r["item"] != item.pk)
    schema = api.get("/api/schema/").content.decode()
    assert "current_version" in schema and "stale" in schema
    assert api.post(f"/api/evaluation/runs/{run.pk}/refresh/").status_code == 200
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
    assert list(SupersededResult.objects.filter(run=run).values_list("item_id", "item_version")) == [(item.pk, 1)]
    assert Item.objects.get(pk=item.pk).content_version == 2
    assert api.post("/api/evaluation/runs/999999/refresh/").status_code == 404


def test_superseded_rows_are_listed_whole_to_researchers_only(api, sample_items, researcher, annotator):
    from rest_framework.test import APIClient

    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              enqueue=False)
    services.run_execute_in_process(run=run)
    assert api.get(f"/api/evaluation/runs/{run.pk}/superseded/").json()["results"] == []
    item = sample_items[0]
    old = Result.objects.get(run=run, item=item)
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Why?"})
    run, _ = services.run_refresh(run=run, user=researcher, enqueue=False)
    services.run_execute_in_process(run=run)

    page = api.get(f"/api/evaluation/runs/{run.pk}/superseded/").json()
    (row,) = page["results"]
    assert (row["result_id"], row["item"], row["external_id"], row["item_version"], row["current_version"]) == (
        old.pk, item.pk, item.external_id, 1, 2)
    assert row["superseded_by"] == researcher.username and row["is_correct"] == old.is_correct
    assert row["row"]["id"] == old.pk and row["row"]["raw_output"] == old.raw_output
    assert Result.objects.get(run=run, item=item).pk != old.pk  # the current row is in results/, not here
    assert "/api/evaluation/runs/{id}/superseded/" in api.get("/api/schema/").content.decode()
    assert api.get("/api/evaluation/runs/999999/superseded/").status_code == 404
    other = APIClient()
    assert other.get(f"/api/evaluation/runs/{run.pk}/superseded/").status_code in (401, 403)
    other.force_authenticate(annotator)
    assert other.get(f"/api/evaluation/runs/{run.pk}/superseded/").status_code == 403
