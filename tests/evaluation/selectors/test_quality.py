"""The data-quality report on the real test split (9 items repeat an option, in 4 the correct option's text is
also a wrong one; the answer-position skew), flagged items for analyses, translations, the page and its JSON.

Analyses without the items the data-quality report flags, and saying so: the leaderboard, the two-run
comparison and the figures, on the page, in the API and from the command line; and the figures and the
report in the REST API (files that are what they say)."""
import io
import json
import time

import pytest
from django.core.management import call_command
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from scipy import stats

from annotation.models import Item
from evaluation.figures.data import FIGURES
from evaluation.models import Result
from evaluation.selectors import quality
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from evaluation.statistics.quality_checks import FLAG_KINDS, option_flags, translation_gaps
from foundation.errors import Invalid
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


DUPLICATES = ["232", "433", "479", "521", "603", "783", "911", "927", "3796"]  # measured on v1.3 test.jsonl


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_option_checks():
    assert option_flags(["a", "b", "c"], 0) == {}
    assert set(option_flags(["a", "B ", "b"], 0)) == {"duplicate_options"}
    assert set(option_flags(["x  y", "b", "X Y"], 2)) == {"duplicate_options", "answer_text_repeated"}
    full = {"context": "c", "question": "q", "options": ["1", "2"]}
    assert translation_gaps({"zh": full}, {"zh"}, 2) == []
    assert translation_gaps({"zh": {**full, "options": ["1"]}}, {"zh", "de"}, 2) == ["de", "zh"]
    assert translation_gaps({"zh": {**full, "question": ""}}, {"zh"}, 2) == ["zh"]


def test_report_on_the_real_test_split(detectbench_dir, researcher_client):
    assert import_items(detectbench_dir / "test.jsonl", split="test") == 1196
    started = time.monotonic()
    report = quality.quality_report(split="test")
    first_s = time.monotonic() - started
    counts = {k["kind"]: k["count"] for k in report["kinds"]}
    assert report["n_items"] == 1196
    assert counts["duplicate_options"] == 9 and counts["answer_text_repeated"] == 4
    assert counts["missing_translation"] == 0 and report["languages"] == []
    ids = dict(Item.objects.filter(split="test").values_list("external_id", "pk"))
    duplicate = quality.flagged_item_ids(split="test", kinds=["duplicate_options"])
    assert duplicate == {ids[e] for e in DUPLICATES}
    repeated = quality.flagged_item_ids(split="test", kinds=["answer_text_repeated"])
    records = {str(r["id"]): r for r in _records(detectbench_dir / "test.jsonl")}
    by_pk = {pk: external for external, pk in ids.items()}
    for pk in repeated:  # independently: the correct text stands more than once
        record = records[by_pk[pk]]
        texts = [" ".join(o.split()).casefold() for o in record["options"]]
        assert texts.count(texts[record["answer"]]) == 2
    assert len(repeated) == 4 and repeated < duplicate
    # Unanchored clues: as many as the items have flagged; clue counts add up to the stored facts.
    clues = report["clues"]
    assert clues["clues"] == sum(Item.objects.filter(split="test").values_list("evidence_count", flat=True))
    assert clues["exact"] + clues["fuzzy"] + clues["unanchored"] == clues["clues"] and clues["unanchored"] > 0
    assert counts["unanchored_clue"] == len(quality.flagged_item_ids(split="test", kinds=["unanchored_clue"]))
    assert quality.flagged_item_ids(split="test") == {e["item"] for e in report["flagged"]}
    # Answer position: the paper's data puts the answer first in 571 of 1,196 items.
    positions = report["answer_positions"]
    assert positions["counts"][0] == 571 and sum(positions["counts"]) == 1196
    assert positions["first_share"] == pytest.approx(571 / 1196)
    assert positions["p_value"] == pytest.approx(stats.chisquare(positions["counts"]).pvalue)
    # A second read comes from the cache.
    started = time.monotonic()
    assert quality.quality_report(split="test") == report
    assert time.monotonic() - started < max(0.5, first_s / 5)
    # The page and its JSON (researchers only).
    page = researcher_client.get(reverse("evaluation:quality") + "?split=test").content.decode()
    assert 'data-kind="duplicate_options"><td><code>duplicate_options</code></td><td class="count">9</td>' in page
    assert 'data-kind="answer_text_repeated"><td><code>answer_text_repeated</code></td><td class="count">4</td>' in page
    assert "47.7%" in page and reverse("annotation:item_detail", args=[ids["232"]]) in page
    assert researcher_client.get(reverse("evaluation:quality") + "?split=test&format=json").json() == report
    assert researcher_client.get(reverse("evaluation:quality") + "?split=nope&format=json").status_code == 400
    assert b"Choose a split" in researcher_client.get(reverse("evaluation:quality")).content


def test_an_edit_or_a_translation_is_seen_at_once(detectbench_dir, annotator):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=20)
    before = quality.quality_report(split="test")
    assert before["n_flagged"] == len(before["flagged"])
    items = list(Item.objects.filter(split="test").order_by("pk"))
    first, second = items[0], items[1]
    options = list(first.options)
    options[1] = options[first.answer_index] if first.answer_index != 1 else options[0]
    Item.objects.filter(pk=first.pk).update(options=options, version=F("version") + 1, updated_at=timezone.now())
    translation = {"zh": {"context": "语境", "question": "问题", "options": ["一", "二", "三", "四"]}}
    Item.objects.filter(pk=second.pk).update(translations=translation, version=F("version") + 1,
                                             updated_at=timezone.now())
    after = quality.quality_report(split="test")
    counts = {k["kind"]: k["count"] for k in after["kinds"]}
    assert counts["duplicate_options"] == 1 and counts["answer_text_repeated"] == 1
    assert after["languages"] == ["zh"] and counts["missing_translation"] == 19  # every item but the second
    assert second.pk not in quality.flagged_item_ids(split="test", kinds=["missing_translation"])
    with pytest.raises(Invalid, match="Unknown flag"):
        quality.flagged_item_ids(split="test", kinds=["typo"])
    assert set(FLAG_KINDS) >= {"duplicate_options", "answer_text_repeated", "unanchored_clue", "missing_translation"}
    other = Client()
    other.force_login(annotator)
    assert other.get(reverse("evaluation:quality") + "?split=test").status_code == 403


# --------------------------------------------------------------------------- exclude flagged

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
    assert {c["n"] for c in json.loads(out.getvalue())["cells"]} == {60 - len(every)}
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
