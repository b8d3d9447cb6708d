"""Analyses without the items the data-quality report flags, and saying so: the leaderboard, the two-run
comparison and the figures, on the page, in the API and from the command line; and the figures and the
report in the REST API (files that are what they say)."""
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.figures.data import FIGURES
from evaluation.models import Result
from evaluation.selectors import quality
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from evaluation.statistics.quality_checks import FLAG_KINDS
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


@pytest.fixture
def runs(detectbench_dir, compute):
    """60 real test items (item 232 repeats an option) answered by two built-ins."""
    import_items(detectbench_dir / "test.jsonl", split="test", limit=60)
    return [compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=name), method="naive",
                                        split="test", enqueue=False)) for name in ("first-option", "lexical")]


def _correct(run, without=frozenset()):
    rows = Result.objects.filter(run=run, error="").exclude(item_id__in=without)
    return rows.count(), rows.filter(is_correct=True).count()


def test_the_leaderboard_leaves_flagged_items_out_and_says_how_many(runs):
    duplicate = quality.flagged_item_ids(split="test", kinds=["duplicate_options"])
    assert len(duplicate) == 1
    table = leaderboard(split="test", exclude=["duplicate_options"])
    assert table.excluded_items == 1 and "1 flagged item(s) excluded (duplicate_options" in table.scope
    for cell in table.cells:
        assert (cell.metrics.n, cell.metrics.correct) == _correct(cell.run, duplicate)
    every = quality.flagged_item_ids(split="test")
    all_kinds = leaderboard(split="test", exclude=list(FLAG_KINDS), common=True, reference="naive@builtin:lexical")
    assert all_kinds.excluded_items == len(every) and all_kinds.common_items == 60 - len(every)
    assert all(c.metrics.n == 60 - len(every) for c in all_kinds.cells)
    first = next(c for c in all_kinds.cells if not c.is_reference)
    assert first.paired.n == 60 - len(every)
    plain = leaderboard(split="test")
    assert plain.excluded_items == 0 and "excluded" not in plain.scope and plain.cells[0].metrics.n == 60
    with pytest.raises(Exception, match="Unknown flag"):
        leaderboard(split="test", exclude=["nonsense"])


def test_page_api_and_command_say_the_same(runs, researcher_client, api):
    every = quality.flagged_item_ids(split="test")
    page = researcher_client.get(reverse("evaluation:leaderboard"), {"split": "test", "exclude_flagged": "on"})
    assert page.status_code == 200
    assert f'data-excluded="{len(every)}"' in page.content.decode()
    response = api.get("/api/evaluation/leaderboard/", {"split": "test", "exclude_flagged": "true"})
    assert response.status_code == 200, response.content[:300]
    data = response.json()
    assert data["excluded_items"] == len(every) and sorted(data["excluded_kinds"]) == sorted(FLAG_KINDS)
    assert {c["n"] for c in data["cells"]} == {60 - len(every)}
    some = api.get("/api/evaluation/leaderboard/", {"split": "test", "exclude": ["duplicate_options"]}).json()
    assert some["excluded_items"] == 1 and {c["n"] for c in some["cells"]} == {59}
    assert api.get("/api/evaluation/leaderboard/", {"split": "test", "exclude": ["nonsense"]}).status_code == 400
    out, err = io.StringIO(), io.StringIO()
    call_command("leaderboard", "--split", "test", "--exclude-flagged", "--format", "json", stdout=out, stderr=err)
    assert out.getvalue(), err.getvalue()
    assert {c["n"] for c in json.loads(out.getvalue())} == {60 - len(every)}
    out = io.StringIO()
    call_command("leaderboard", "--split", "test", "--exclude-flagged", "duplicate_options", stdout=out)
    assert "1 flagged item(s) excluded" in out.getvalue()


def test_the_comparison_leaves_them_out_too(runs, researcher_client, api):
    a, b = runs
    plain = run_comparison(a=a, b=b)
    kept = run_comparison(a=a, b=b, exclude=["duplicate_options"])
    assert (plain.paired.n, kept.paired.n, kept.excluded_items) == (60, 59, 1)
    data = api.get("/api/evaluation/compare/", {"a": a.pk, "b": b.pk, "exclude_flagged": "true"}).json()
    assert data["pairs"] == 60 - data["excluded_items"] and data["excluded_items"] == len(
        quality.flagged_item_ids(split="test"))
    page = researcher_client.get(reverse("evaluation:run_compare"),
                                 {"a": a.pk, "b": b.pk, "exclude": "duplicate_options"}).content.decode()
    assert 'data-excluded="1"' in page and "59 pairs" in page


def test_figures_and_the_quality_report_in_the_api(runs, api, researcher_client, tmp_path):
    listed = api.get("/api/evaluation/figures/").json()
    assert [f["name"] for f in listed] == list(FIGURES)
    magic = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}
    for fmt, start in magic.items():
        response = api.get(f"/api/evaluation/figures/keyinfo-accuracy/{fmt}/", {"split": "test"})
        assert response.status_code == 200 and response.content.startswith(start), (fmt, response.content[:80])
        assert response["Content-Disposition"] == f'attachment; filename="keyinfo-accuracy-test.{fmt}"'
    data = api.get("/api/evaluation/figures/accuracy-by-clues/", {"split": "test", "exclude_flagged": "true"}).json()
    every = quality.flagged_item_ids(split="test")
    assert sum(data["items_per_group"]) == 60 - len(every) and f"{len(every)} flagged item(s) excluded" in data["note"]
    page = researcher_client.get(reverse("evaluation:figure", args=["accuracy-by-clues"]),
                                 {"split": "test", "exclude_flagged": "on"}).content.decode()
    assert f"{len(every)} flagged item(s) excluded" in page
    out = io.StringIO()
    call_command("figure", "accuracy-by-clues", "--split", "test", "--out", str(tmp_path / "f.json"),
                 "--exclude-flagged", stdout=out)
    assert json.loads((tmp_path / "f.json").read_text())["items_per_group"] == data["items_per_group"]
    assert f"{len(every)} flagged item(s) excluded" in out.getvalue()
    assert api.get("/api/evaluation/figures/keyinfo-accuracy/png/").status_code == 400
    assert api.get("/api/evaluation/figures/keyinfo-accuracy/", {"split": "nope"}).status_code == 400
    assert api.get("/api/evaluation/figures/no-such-figure/", {"split": "test"}).status_code == 404
    assert api.get("/api/evaluation/figures/keyinfo-accuracy/gif/", {"split": "test"}).status_code == 404
    report = api.get("/api/evaluation/quality/", {"split": "test"})
    assert report.status_code == 200 and report.json() == quality.quality_report(split="test")
    assert api.get("/api/evaluation/quality/").status_code == 400
    assert api.get("/api/evaluation/quality/", {"split": "nope"}).status_code == 400
    schema = researcher_client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in ("/api/evaluation/figures/{name}/{fmt}/", "/api/evaluation/quality/", "/api/evaluation/sweeps/"):
        assert f'"{path}"' in schema, path
    assert '"image/png"' in schema and '"application/pdf"' in schema and '"QualityReport"' in schema
