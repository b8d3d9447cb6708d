"""Every pair on the leaderboard (issue 21, point 4): the built-in models' runs on real DetectBench items and a study
with three raters per item; each pair's p equals an exact McNemar recomputed from the stored rows, the correction
equals statsmodels' multipletests, humans sit in the same family, and the page, the files and the API show it."""
import csv
import io

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

from annotation.models import Item
from evaluation.models import Result
from evaluation.selectors.leaderboard import leaderboard
from evaluation.selectors.pairwise import pairwise_table
from evaluation.services import runs as services
from studies.services import attempt_start, question_open, response_submit, study_create, study_join
from tests.support.items import import_items

pytestmark = pytest.mark.django_db

MODELS = ("first-option", "lexical", "random")


@pytest.fixture
def board(detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=40)
    runs = [compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method=method,
                                        split="test", enqueue=False))
            for model in MODELS for method in ("naive", "self-cot")]
    items = list(Item.objects.filter(split="test").order_by("pk"))
    study = study_create(slug="pairs", item_ids=[i.pk for i in items[:12]], per_participant=12, raters=3,
                         time_limit_seconds=600, status="open", completion_code="C")
    for p in range(3):  # three raters per item; each right on about two items in three
        attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"p{p}").pk)
        while (question := question_open(attempt=attempt)) is not None:
            item = Item.objects.get(pk=question.lease.item_id)
            right = (item.pk + p) % 3 != 0
            response_submit(token=attempt.token, position=question.lease.position,
                            chosen_option=item.answer_index if right else (item.answer_index + 1) % len(item.options))
    return runs, items


def _outcomes(run) -> dict:
    return {(r.item_id, r.item_version): r.is_correct
            for r in Result.objects.filter(run=run, sample_index=0, error="", is_correct__isnull=False)}


@pytest.mark.parametrize("correction,method", [("holm", "holm"), ("bh", "fdr_bh")])
def test_every_pair_and_humans_equal_an_independent_recomputation(board, correction, method):
    runs, items = board
    table = leaderboard(split="test")
    result = pairwise_table(table, correction=correction)
    keys = {c.key: c.run for c in table.cells}
    assert result.labels == ["humans", *keys] and len(result.tests) == 6 + 15
    for t in result.tests:
        if t.a == "humans":
            assert t.test == "item sign-flip" and t.n == 12 and t.raters == 36
            continue
        a, b = _outcomes(keys[t.a]), _outcomes(keys[t.b])
        common = a.keys() & b.keys()
        discordant = (sum(1 for k in common if a[k] and not b[k]), sum(1 for k in common if not a[k] and b[k]))
        assert (t.n, (t.a_better, t.b_better)) == (len(common), discordant) and t.n == 40
        expected = binomtest(discordant[0], sum(discordant), 0.5).pvalue if sum(discordant) else 1.0
        assert t.p_value == pytest.approx(expected, rel=1e-10)
    raw = [t.p_value for t in result.tests]
    assert [t.p_adjusted for t in result.tests] == pytest.approx(list(multipletests(raw, method=method)[1]))
    # The built-in first option answers alike under both methods: no discordant pair, p = 1.
    same = result.get("naive@builtin:first-option", "self-cot@builtin:first-option")
    assert (same.a_better, same.b_better, same.p_value) == (0, 0, 1.0)


def test_the_page_shows_the_matrix_and_the_table_and_the_files_and_api_agree(board, researcher_client):
    page = researcher_client.get("/evaluation/leaderboard/", {"split": "test", "pairwise": "bh"})
    html = page.content.decode()
    assert page.status_code == 200 and "Every pair compared" in html
    assert "Benjamini-Hochberg (false discovery rate)" in html and html.count("<svg") >= 2
    assert "item sign-flip" in html and "exact McNemar" in html
    off = researcher_client.get("/evaluation/leaderboard/", {"split": "test"}).content.decode()
    assert "Every pair compared" not in off
    query = {"split": "test", "pairwise": "bh"}
    rows = list(csv.DictReader(io.StringIO(
        researcher_client.get("/evaluation/leaderboard/pairwise.csv", query).content.decode())))
    api = researcher_client.get("/api/evaluation/leaderboard/pairwise/", {"split": "test", "correction": "bh"}).json()
    assert len(rows) == len(api["tests"]) == 21 and api["correction"] == "bh"
    for row, test in zip(rows, api["tests"]):
        assert (row["a"], row["b"], row["correction"]) == (test["a"], test["b"], "bh")
        assert float(row["p_adjusted"]) == pytest.approx(test["p_adjusted"])
    tex = researcher_client.get("/evaluation/leaderboard/pairwise.tex", query).content.decode()
    assert r"\begin{tabular}" in tex and "Benjamini-Hochberg" in tex and r"naive@builtin:lexical" in tex
    png = researcher_client.get("/evaluation/leaderboard/pairwise.png", query)
    assert png["Content-Type"] == "image/png" and png.content[:4] == b"\x89PNG"
    holm = researcher_client.get("/evaluation/leaderboard/pairwise.json", {"split": "test"}).json()
    assert holm["correction"] == "holm" and "split test" in holm["scope"]
    assert researcher_client.get("/evaluation/leaderboard/pairwise.xls", query).status_code == 404
    assert researcher_client.get("/api/evaluation/leaderboard/pairwise/",
                                 {"split": "test", "correction": "bonferroni"}).status_code == 400


def test_without_study_answers_there_is_no_humans_row(detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=10)
    for model in ("lexical", "random"):
        compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method="naive",
                                    split="test", enqueue=False))
    result = pairwise_table(leaderboard(split="test", common=True))
    assert "humans" not in result.labels and len(result.tests) == 1 and result.tests[0].n == 10


def test_the_command_prints_every_pair(board, tmp_path):
    from django.core.management import call_command

    out = io.StringIO()
    call_command("leaderboard", "--split", "test", "--pairwise", "bh", stdout=out)
    text = out.getvalue()
    assert "Benjamini-Hochberg (false discovery rate)" in text and len(text.splitlines()) == 1 + 21
    path = tmp_path / "pairs.csv"
    call_command("leaderboard", "--split", "test", "--pairwise", "holm", "--format", "csv", "--out", str(path),
                 stderr=io.StringIO())
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert len(rows) == 21 and {r["correction"] for r in rows} == {"holm"}
