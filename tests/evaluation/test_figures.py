"""The paper's figures from the database: the numbers (Fig. 4's r is scipy's Pearson r on the runs' values,
bins and question types count every row once, humans beside models per item), the files (valid PNG and
PDF for a paper, SVG), the page (researchers only, a split must be chosen) and `manage.py figure`."""
import io
import re
from collections import defaultdict

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from matplotlib import image as mpimg
from PIL import Image
from scipy import stats

from annotation.models import Item
from evaluation.figures.data import FIGURES, RunRows, accuracy_by_feature, keyinfo_accuracy, make_bins
from evaluation.figures.drawing import Bar, bar_chart, draw, inline_svg, render
from evaluation.models import Result, Run
from evaluation.selectors import analysis
from evaluation.services import runs as services
from studies.models import Response, StudyStatus
from studies.services import attempt_start, question_open, response_submit, study_create, study_join
from tests.support.items import import_items

pytestmark = pytest.mark.django_db(transaction=True)  # runs compute on a thread of their own

RUNS = [("first-option", "naive"), ("random", "naive"), ("lexical", "naive"), ("lexical", "naive-key-info"),
        ("random", "self-cot"), ("first-option", "ps-cot")]


@pytest.fixture
def runs(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=60)
    made = []
    for builtin, method in RUNS:
        run = services.run_launch(endpoint=services.endpoint_for_cli(builtin=builtin), method=method, split="test",
                                  enqueue=False)
        services.run_execute_in_process(run=run)
        made.append(Run.objects.get(pk=run.pk))
    return made


def _run_values(run):
    """(KeyInfo, accuracy) straight from the run's rows: mean KeyInfo and correct / scored rows."""
    rows = list(Result.objects.filter(run=run, error="").values_list("keyinfo", "is_correct"))
    return sum(k for k, _ in rows) / len(rows), sum(1 for _, c in rows if c) / len(rows)


def test_pure_figure_numbers():
    runs = [RunRows(run_id=i, label=f"r{i}", rows=tuple((item, item < 4 + 7 * i % 5) for item in range(30)),
                    keyinfo=k) for i, k in enumerate([0.1, 0.3, 0.2, 0.5])]
    data = keyinfo_accuracy(runs)
    assert len({r.accuracy for r in runs}) == 4
    assert data.r == pytest.approx(stats.pearsonr([r.keyinfo for r in runs], [r.accuracy for r in runs]).statistic)
    assert keyinfo_accuracy(runs[:1]).r is None  # one run: no correlation
    same = [RunRows(run_id=i, label="", rows=((1, True), (2, False)), keyinfo=k) for i, k in enumerate([0.1, 0.2])]
    assert keyinfo_accuracy(same).r is None  # equal accuracies: r undefined, not NaN
    assert [(b.low, b.high) for b in make_bins([1, 2, 2, 3])] == [(1, 1), (2, 2), (3, 3)]
    clues = [0] * 9 + [1] * 23 + [2] * 378 + [3] * 627 + [4] * 104 + [5] * 38 + [6] * 15 + [7, 8]  # the test split
    assert [b.label for b in make_bins(clues)] == ["0–2", "3", "4", "5–8"]  # sparse tails merged inward
    wide = make_bins(list(range(100)), count=5)
    assert len(wide) == 5 and wide[0].low == 0 and wide[-1].high == 99
    assert all(a.high < b.low for a, b in zip(wide, wide[1:]))  # disjoint, ordered


def test_fig4_r_equals_scipy_pearsonr_on_the_runs_values(runs):
    data = analysis.figure_data("keyinfo-accuracy", split="test")
    values = [_run_values(run) for run in runs]
    expected = stats.pearsonr([k for k, _ in values], [a for _, a in values])
    assert data.n == len(RUNS)
    assert data.r == pytest.approx(expected.statistic, abs=1e-12)
    assert data.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    by_run = {p.run_id: (p.x, p.y) for p in data.points}
    for run, (keyinfo, accuracy) in zip(runs, values):
        assert by_run[run.pk] == pytest.approx((keyinfo, accuracy))
    svg = inline_svg(draw(data))
    assert svg.startswith("<svg") and "Pearson r" in svg and svg.count('class="point"') == len(RUNS)


def test_fig5_and_fig6_count_every_row_once_in_its_bin(runs):
    items = {i.pk: i for i in Item.objects.filter(split="test")}
    for name in ("accuracy-by-context-length", "accuracy-by-option-length", "accuracy-by-clues", "accuracy-by-steps",
                 "accuracy-by-question-type"):
        data = analysis.figure_data(name, split="test")
        assert sum(data.items_per_group) == 60, name
        assert sorted(s.run_id for s in data.series) == sorted(r.pk for r in runs)
        for series in data.series:
            rows = Result.objects.filter(run_id=series.run_id, error="")
            assert sum(c.n for c in series.cells) == rows.count()
            assert sum(c.correct for c in series.cells) == rows.filter(is_correct=True).count()
    types = analysis.figure_data("accuracy-by-question-type", split="test")
    first = next(s for s in types.series if s.run_id == runs[0].pk)
    counts = defaultdict(lambda: [0, 0])
    for item_id, correct in Result.objects.filter(run=runs[0]).values_list("item_id", "is_correct"):
        counts[items[item_id].question_type][0] += correct
        counts[items[item_id].question_type][1] += 1
    assert {c.group: (c.correct, c.n) for c in first.cells} == {t: tuple(v) for t, v in counts.items()}
    clues = analysis.figure_data("accuracy-by-clues", split="test")
    assert sum(c.n for c in clues.series[0].cells) == 60


def _answer_study(item_ids):
    """Two participants answer every item: one always right, one always the first option."""
    study = study_create(slug="fig", item_ids=item_ids, per_participant=len(item_ids), raters=2,
                         time_limit_seconds=3600, status=StudyStatus.OPEN, completion_code="CODE-1")
    for pid, right in (("always-right", True), ("always-first", False)):
        attempt = attempt_start(attempt_id=study_join(study=study, participant_id=pid).pk)
        while (question := question_open(attempt=attempt)) is not None:
            item = question.lease.item
            response_submit(token=attempt.token, position=question.lease.position,
                            chosen_option=item.answer_index if right else 0)


def test_human_against_model_per_item(runs):
    ids = list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))[:12]
    _answer_study(ids)
    data = analysis.figure_data("human-vs-model", split="test")
    assert data.n == 12
    for point in data.points:
        answers = Response.objects.filter(item_id=point.item_id)
        assert point.n == answers.count() == 2
        assert point.x == answers.filter(is_correct=True).count() / 2
        rows = Result.objects.filter(run__in=runs, item_id=point.item_id, error="")
        assert point.y == pytest.approx(rows.filter(is_correct=True).count() / rows.count())
    expected = stats.pearsonr([p.x for p in data.points], [p.y for p in data.points])
    assert data.r == pytest.approx(expected.statistic)
    assert "24 participant answer(s)" in data.note


def _pdf_objects(pdf: bytes) -> int:
    """Parse the PDF's cross-reference table: every in-use entry must point at its 'N 0 obj'."""
    assert pdf.startswith(b"%PDF-1.") and pdf.rstrip().endswith(b"%%EOF")
    start = int(re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", pdf).group(1))
    assert pdf[start:start + 4] == b"xref"
    first, count = map(int, re.match(rb"xref\s+(\d+)\s+(\d+)", pdf[start:]).groups())
    entries = re.findall(rb"(\d{10}) (\d{5}) ([nf])", pdf[start:])[:count]
    used = 0
    for number, (offset, _, kind) in enumerate(entries, first):
        if kind == b"n":
            assert re.match(rb"%d 0 obj" % number, pdf[int(offset):]), number
            used += 1
    return used


def test_every_figure_downloads_as_png_pdf_svg_and_json(runs, researcher_client, tmp_path):
    for name in FIGURES:
        for fmt in ("png", "pdf", "svg", "json"):
            response = researcher_client.get(reverse("evaluation:figure_file", args=[name, fmt]) + "?split=test")
            assert response.status_code == 200, (name, fmt)
            assert f'filename="{name}-test.{fmt}"' in response["Content-Disposition"]
            body = response.content
            if fmt == "png":
                assert body[:8] == b"\x89PNG\r\n\x1a\n" and response["Content-Type"] == "image/png"
                with Image.open(io.BytesIO(body)) as picture:
                    picture.verify()
                pixels = mpimg.imread(io.BytesIO(body), format="png")
                assert pixels.shape[0] > 300 and pixels.shape[1] > 300 and pixels.std() > 0  # drawn, not blank
            elif fmt == "pdf":
                assert response["Content-Type"] == "application/pdf" and _pdf_objects(body) > 5
                assert body.count(b"/Type /Page\n") + body.count(b"/Type /Page ") + body.count(b"/Type /Page>") >= 1
                assert b"/Type3" not in body and b"/FontFile2" in body  # embedded TrueType, no Type 3 fonts (papers reject them)
            elif fmt == "svg":
                assert b"<svg" in body and b"<script" not in body
            else:
                assert response.json()["figure"] == name


def test_figures_page_needs_a_split_and_a_researcher(runs, researcher_client, annotator):
    annotator_client, anonymous = Client(), Client()
    annotator_client.force_login(annotator)
    page = researcher_client.get(reverse("evaluation:figures"))
    assert page.status_code == 200 and b"Choose a split" in page.content and b"hx-get" not in page.content
    page = researcher_client.get(reverse("evaluation:figures") + "?split=test").content.decode()
    for name in FIGURES:
        assert reverse("evaluation:figure", args=[name]) in page and f'id="figure-{name}"' in page
    part = researcher_client.get(reverse("evaluation:figure", args=["keyinfo-accuracy"]) + "?split=test",
                                 HTTP_HX_REQUEST="true").content.decode()
    assert part.lstrip().startswith("<svg") and "<html" not in part and "Pearson r" in part
    assert researcher_client.get(reverse("evaluation:figure", args=["keyinfo-accuracy"]) + "?split=nope").status_code == 400
    assert researcher_client.get(reverse("evaluation:figure", args=["nope"]) + "?split=test").status_code == 404
    assert researcher_client.get(reverse("evaluation:figure_file", args=["keyinfo-accuracy", "exe"])
                                 + "?split=test").status_code == 404
    for url in (reverse("evaluation:figures") + "?split=test", reverse("evaluation:figure_file", args=["keyinfo-accuracy", "png"])):
        assert annotator_client.get(url).status_code == 403
        assert anonymous.get(url).status_code == 302


def test_excluding_flagged_items_says_how_many_and_circular_runs_are_kept_apart(runs):
    services.run_execute_in_process(run=services.run_launch(
        endpoint=services.endpoint_for_cli(builtin="first-option"), method="naive", split="test", enqueue=False,
        option_order="circular"))
    plain = analysis.figure_data("accuracy-by-question-type", split="test")
    assert len(plain.series) == len(RUNS)  # original order only, by default
    both = analysis.figure_data("accuracy-by-question-type", split="test", option_order="")
    assert len(both.series) == len(RUNS) + 1 and any(s.label.endswith("· circular") for s in both.series)
    kept = analysis.figure_data("accuracy-by-clues", split="test", exclude=["duplicate_options"])
    assert sum(kept.items_per_group) == 59  # item 232 repeats an option
    assert "1 flagged item(s) excluded (duplicate_options)" in kept.note
    with pytest.raises(Exception, match="Unknown flag"):
        analysis.figure_data("accuracy-by-clues", split="test", exclude=["nonsense"])


def test_figure_command_writes_each_format(runs, tmp_path):
    out = io.StringIO()
    call_command("figure", "keyinfo-accuracy", "--split", "test", "--out", str(tmp_path / "f4.pdf"), stdout=out)
    values = [_run_values(run) for run in runs]
    r = stats.pearsonr([k for k, _ in values], [a for _, a in values]).statistic
    assert f"Pearson r = {r:.4f}" in out.getvalue()
    assert (tmp_path / "f4.pdf").read_bytes().startswith(b"%PDF")
    for name in FIGURES:
        call_command("figure", name, "--split", "test", "--out", str(tmp_path / f"{name}.png"), stdout=io.StringIO())
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    call_command("figure", "accuracy-by-steps", "--split", "test", "--out", str(tmp_path / "s.svg"), stdout=io.StringIO())
    assert b"<svg" in (tmp_path / "s.svg").read_bytes()
    with pytest.raises(CommandError, match="must end in"):
        call_command("figure", "accuracy-by-steps", "--split", "test", "--out", str(tmp_path / "s.gif"))
    with pytest.raises(CommandError, match="split"):
        call_command("figure", "accuracy-by-steps", "--split", "", "--out", str(tmp_path / "s.png"))


def test_bar_chart_keeps_its_page_contract():
    """Each bar has its own baseline mark (runs with permuted and original options differ), labels escaped."""
    svg = bar_chart([Bar("a <script>&", 0.5, 0.4, 0.6, baseline=0.48), Bar("b $x$", 0.3, baseline=0.25),
                     Bar("c", None)], title="t")
    assert svg.count('class="baseline"') == 2 and "48.0%" in svg and "25.0%" in svg
    assert "&lt;script&gt;&amp;" in svg and "<script" not in svg and "b $x$" in svg
    assert " style=" not in svg  # presentation attributes only: no inline style for the page's CSP
    assert render(draw(keyinfo_accuracy([])), "png")[:4] == b"\x89PNG"  # an empty figure still draws
    assert accuracy_by_feature("accuracy-by-steps", [], {}).groups == ()


def test_a_figure_is_over_the_runs_chosen_and_an_empty_one_says_why_everywhere(runs, researcher_client, tmp_path):
    """The researcher picks runs from a list; a figure that would be empty (stale items, no common item, no run)
    is refused with the reason on the page, in the files, the API and the CLI, never drawn as empty axes."""
    from annotation.services import item_update

    chosen = [runs[0].pk, runs[2].pk]
    data = analysis.figure_data("keyinfo-accuracy", split="test", run_ids=chosen)
    assert len(data.points) == 2 and "2 run(s)" in data.note
    page = researcher_client.get(reverse("evaluation:figures") + "?split=test").content.decode()
    assert page.count('name="runs"') == len(runs) and f"(#{runs[0].pk})" in page

    # Every item's content changes (through the service where the item is valid as it stands; a few real items
    # repeat an option text, which an edit must fix first: their content version is raised directly).
    from django.db.models import F

    from foundation.errors import Invalid
    for item in Item.objects.filter(split="test"):
        try:
            item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Why?"})
        except Invalid:
            Item.objects.filter(pk=item.pk).update(version=F("version") + 1, content_version=F("content_version") + 1)
    query = f"?split=test&runs={chosen[0]}&runs={chosen[1]}"
    body = researcher_client.get(reverse("evaluation:figure", args=["keyinfo-accuracy"]) + query).content.decode()
    assert "empty-figure" in body and "have no item in common" in body and "stale" in body and "<svg" not in body
    png = researcher_client.get(reverse("evaluation:figure_file", args=["keyinfo-accuracy", "png"]) + query)
    assert png.status_code == 409 and "stale" in png.json()["detail"]
    api = researcher_client.get(f"/api/evaluation/figures/keyinfo-accuracy/?split=test&runs={chosen[0]},{chosen[1]}")
    assert api.status_code == 409 and api.json()["code"] == "empty_figure"
    with pytest.raises(CommandError, match="no item in common"):
        call_command("figure", "keyinfo-accuracy", "--split", "test", "--out", str(tmp_path / "f.png"), "--runs",
                     f"{chosen[0]},{chosen[1]}", stdout=io.StringIO())
    # No run at all on a split.
    with pytest.raises(Exception, match="No finished multiple-choice run on split train"):
        analysis.figure_data("keyinfo-accuracy", split="train")
