"""Researcher pages of runs and tables: runs list metrics and progress, run rows filtered with links to a drill-down
(messages, raw output, parsed answer, key information beside the gold clues), the launch form, the two-run
comparison page, and every table as a file (CSV formula-safe, JSON, LaTeX that compiles, JSONL; the rows refreshes
superseded as JSONL, for researchers only)."""
import csv
import io
import json
import random
import shutil
import subprocess

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Item
from annotation.services import item_update
from evaluation.models import ModelEndpoint, Result, Run
from evaluation.services import runs as services
from tests.conftest import require
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_runs(detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=30)
    first = services.endpoint_for_cli(builtin="first-option")
    lexical = ModelEndpoint.objects.create(name='=HYPERLINK("http://x")&_%$#', kind="builtin", model="lexical")
    a = compute(services.run_launch(endpoint=first, method="naive", split="test", enqueue=False))
    b = compute(services.run_launch(endpoint=lexical, method="naive", split="test", enqueue=False))
    return a, b


def _get(client, name, *args, query=""):
    response = client.get(reverse(name, args=args) + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.content[:500]
    return response


def test_runs_list_shows_accuracy_interval_baseline_and_tokens(researcher_client, two_runs):
    a, _ = two_runs
    html = _get(researcher_client, "evaluation:run_list").content.decode()
    rows = Result.objects.filter(run=a)
    accuracy = 100 * rows.filter(is_correct=True).count() / 30
    first = 100 * rows.filter(answer_first=True).count() / 30
    assert f"{accuracy:.1f}%" in html and f"<td>{first:.1f}</td>" in html and "Accuracy (95% CI)" in html
    tokens = sum(rows.values_list("tokens_in", flat=True))
    assert f"<td>{tokens} / " in html


def test_progress_shows_done_errors_tokens_and_an_eta_while_running(researcher_client, detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=10)
    run = compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin="random"), method="naive",
                                      split="test", limit=4, enqueue=False))
    Run.objects.filter(pk=run.pk).update(status="running")
    Run.objects.filter(pk=run.pk).update(item_ids=run.item_ids + [i.pk for i in Item.objects.all()[4:8]])
    part = _get(researcher_client, "evaluation:run_detail", run.pk, query="part=progress").content.decode()
    assert "4/8" in part and "errors 0" in part and "tokens " in part and "s left" in part
    assert 'hx-trigger="every 2s"' in part


def test_run_rows_filter_by_outcome_and_type_and_link_to_the_drill_down(researcher_client, two_runs):
    a, _ = two_runs
    wrong = Result.objects.filter(run=a, is_correct=False)
    html = _get(researcher_client, "evaluation:run_detail", a.pk, query="status=wrong").content.decode()
    table = html.split('<div id="results"')[1]
    assert table.count("/results/") == wrong.count() > 0
    for r in wrong:
        assert reverse("evaluation:result_detail", args=[a.pk, r.pk]) in table
    qtype = Result.objects.filter(run=a).values_list("item__question_type", flat=True).first()
    typed = _get(researcher_client, "evaluation:run_detail", a.pk, query=f"part=results&question_type={qtype}",
                 ).content.decode()
    assert typed.count("/results/") == Result.objects.filter(run=a, item__question_type=qtype).count()
    none = _get(researcher_client, "evaluation:run_detail", a.pk, query="status=error").content.decode()
    assert "No rows match" in none


def test_drill_down_shows_messages_output_answer_and_key_information_beside_the_clues(researcher_client, two_runs):
    _, b = two_runs
    row = Result.objects.filter(run=b).select_related("item").first()
    html = _get(researcher_client, "evaluation:result_detail", b.pk, row.pk).content.decode()
    user_message = next(m["content"] for m in row.messages[0]["messages"] if m["role"] == "user")
    from django.utils.html import escape

    assert escape(user_message) in html and escape(row.raw_output) in html
    assert f"<th>Parse status</th><td>{row.parse_status}</td>" in html
    assert f"<th>Gold</th><td>{row.item.answer_index + 1}</td>" in html
    assert '<mark class="model' in html and '<mark class="clue' in html  # the lexical reader quotes the context
    other_run = two_runs[0]
    assert researcher_client.get(reverse("evaluation:result_detail", args=[other_run.pk, row.pk])).status_code == 404


def test_the_launch_form_ticks_nothing(researcher_client, two_runs):
    html = _get(researcher_client, "evaluation:run_launch").content.decode()
    assert 'name="methods"' in html and "checked" not in html.split('name="methods"')[1].split("</ul>")[0]
    before = Run.objects.count()
    response = researcher_client.post(reverse("evaluation:run_launch"), {
        "endpoint": two_runs[0].endpoint_id, "split": "test", "seed": 1, "samples": 1, "option_order": "original"})
    assert response.status_code == 200 and Run.objects.count() == before


def test_two_run_page_lists_the_items_where_they_differ(researcher_client, two_runs):
    a, b = two_runs
    page = _get(researcher_client, "evaluation:run_compare", query=f"a={a.pk}&b={b.pk}").content.decode()
    ra = dict(Result.objects.filter(run=a).values_list("item_id", "is_correct"))
    rb = dict(Result.objects.filter(run=b).values_list("item_id", "is_correct"))
    differ = [i for i in ra if ra[i] != rb[i]]
    assert f"Items where they differ ({len(differ)})" in page and "30 pairs" in page
    data = json.loads(_get(researcher_client, "evaluation:run_compare", query=f"a={a.pk}&b={b.pk}&format=json").content)
    assert sorted(d["item"] for d in data["differing"]) == sorted(differ) and data["pairs"] == 30
    refused = _get(researcher_client, "evaluation:run_compare", query=f"a={a.pk}&b={a.pk}").content.decode()
    assert "Choose two different runs" in refused


@pytest.mark.parametrize("seed", range(2))
def test_two_run_page_says_how_many_deleted_items_it_left_out(researcher_client, two_runs, seed):
    a, b = two_runs
    rng = random.Random(seed)
    gone = rng.sample(sorted(Result.objects.filter(run=a).values_list("item_id", flat=True)), rng.randint(1, 5))
    for pk in gone:
        item = Item.objects.get(pk=pk)
        item_update(item_id=pk, base_version=item.version, changes={}, status="rejected", note="deleted")
    query = f"a={a.pk}&b={b.pk}"
    page = _get(researcher_client, "evaluation:run_compare", query=query).content.decode()
    assert f"{30 - len(gone)} pairs" in page and f"{len(gone)} deleted item(s) left out" in page
    data = json.loads(_get(researcher_client, "evaluation:run_compare", query=f"{query}&format=json").content)
    assert data["pairs"] == 30 - len(gone) and data["rejected_items"] == len(gone)
    assert not {d["item"] for d in data["differing"]} & set(gone)
    chinese = researcher_client.get(reverse("evaluation:run_compare") + f"?{query}", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert f"略去了 {len(gone)} 个已删除的条目" in chinese.content.decode()


def test_leaderboard_files_csv_is_formula_safe_json_lists_cells_latex_compiles(researcher_client, two_runs, tmp_path):
    a, b = two_runs
    query = f"split=test&reference=naive@{a.endpoint.name}"
    text = _get(researcher_client, "evaluation:leaderboard_export", "csv", query=query).content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["row"] for r in rows] == ["method", "method", "first-option", "first-option", "random", "random"]
    names = {r["endpoint"] for r in rows}
    assert "'=HYPERLINK(\"http://x\")&_%$#" in names and '=HYPERLINK("http://x")&_%$#' not in names
    data = json.loads(_get(researcher_client, "evaluation:leaderboard_export", "json", query=query).content)
    assert {c["run"] for c in data["cells"]} == {a.pk, b.pk} and data["reference"] == f"naive@{a.endpoint.name}"
    latex = _get(researcher_client, "evaluation:leaderboard_export", "tex", query=query).content.decode()
    assert r"\toprule" in latex and r"\_\%\$\#" in latex and r"$^{\dagger}$" in latex
    assert researcher_client.get(reverse("evaluation:leaderboard_export", args=["xls"]) + "?" + query).status_code == 404
    require(shutil.which("pdflatex") is not None, "pdflatex (apt-get install texlive-latex-base)")
    doc = tmp_path / "table.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + latex
                   + "\\end{document}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "table.pdf").read_bytes().startswith(b"%PDF")


def test_run_files_list_types_and_jsonl(researcher_client, two_runs):
    a, b = two_runs
    runs = json.loads(_get(researcher_client, "evaluation:run_list_export", "json").content)
    assert {r["run"] for r in runs} == {a.pk, b.pk} and all(r["n"] == 30 for r in runs)
    listed = list(csv.DictReader(io.StringIO(_get(researcher_client, "evaluation:run_list_export", "csv")
                                             .content.decode())))
    assert len(listed) == 2 and {"accuracy", "first_option_baseline", "accuracy_ci95"} <= set(listed[0])
    types = json.loads(_get(researcher_client, "evaluation:run_types_export", a.pk, "json").content)
    assert sum(t["n"] for t in types) == 30
    assert _get(researcher_client, "evaluation:run_types_export", a.pk, "csv").content.startswith(b"question_type,")
    response = _get(researcher_client, "evaluation:run_results_jsonl", a.pk)
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert len(lines) == 30 and {line["run"] for line in lines} == {a.pk}
    assert lines[0]["messages"] and {"item_version", "raw_output", "parse_status", "external_id"} <= set(lines[0])


def test_leaderboard_page_asks_for_a_split_and_shows_n_in_every_cell(researcher_client, two_runs):
    empty = _get(researcher_client, "evaluation:leaderboard").content.decode()
    assert "Choose a split" in empty and "?split=test" in empty and "<tbody>" not in empty
    a, b = two_runs
    html = _get(researcher_client, "evaluation:leaderboard", query="split=test").content.decode()
    methods, baselines = html.split("<tbody>")[1].split('<tr class="baseline">', 1)
    assert methods.count("<td>30</td>") == 2  # n of each of the two cells
    assert baselines.count("<td>30</td>") == 4  # first-option and random of each column, with their n
    assert "built-in first-option: ignores the prompt" in html
    tested = _get(researcher_client, "evaluation:leaderboard",
                  query=f"split=test&reference=naive@{a.endpoint.name}").content.decode()
    assert "30 pairs" in tested and "items that differ" in tested and '<span class="badge">ref</span>' in tested
    refused = _get(researcher_client, "evaluation:leaderboard", query="split=test&reference=x@y").content.decode()
    assert "No cell &#x27;x@y&#x27;" in refused


def test_two_runs_with_no_common_item_say_so(researcher_client, detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)
    ids = list(Item.objects.order_by("pk").values_list("pk", flat=True))
    first = services.endpoint_for_cli(builtin="first-option")
    a = compute(services.run_launch(endpoint=first, method="naive", ids=ids[:3], enqueue=False))
    b = compute(services.run_launch(endpoint=first, method="naive", ids=ids[3:], enqueue=False))
    page = _get(researcher_client, "evaluation:run_compare", query=f"a={a.pk}&b={b.pk}").content.decode()
    assert "No item in common: 3 item(s) only in A, 3 only in B" in page
    assert "agree on every paired item" not in page and "have no item in common" in page
    # The runs are picked from lists that name them, not typed as numbers.
    assert f'<option value="{a.pk}" selected>' in page and f"(#{b.pk})" in page


def test_the_leaderboard_shows_the_runs_ticked_in_a_list(researcher_client, two_runs):
    a, b = two_runs
    page = _get(researcher_client, "evaluation:leaderboard", query="split=test").content.decode()
    assert f'<option value="{a.pk}">' in page and f"(#{b.pk})" in page  # every finished run, by its name
    only_a = _get(researcher_client, "evaluation:leaderboard", query=f"runs={a.pk}").content.decode()
    both = _get(researcher_client, "evaluation:leaderboard", query=f"runs={a.pk}&runs={b.pk}").content.decode()
    same = _get(researcher_client, "evaluation:leaderboard", query=f"runs={a.pk},{b.pk}").content.decode()
    assert f'<option value="{a.pk}" selected>' in only_a and f'<option value="{b.pk}" selected>' not in only_a
    cell_b = f"/evaluation/runs/{b.pk}/"
    assert f'<option value="{b.pk}" selected>' in both and cell_b in both and cell_b in same and cell_b not in only_a


def test_superseded_rows_as_jsonl_hold_each_old_row_whole_and_no_current_row(researcher_client, researcher, annotator,
                                                                             detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=4)
    run = compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive",
                                      split="test", enqueue=False))
    address = reverse("evaluation:run_superseded_jsonl", args=[run.pk])
    assert address not in _get(researcher_client, "evaluation:run_detail", run.pk).content.decode()
    empty = _get(researcher_client, "evaluation:run_superseded_jsonl", run.pk)
    assert b"".join(empty.streaming_content) == b""
    item = Item.objects.order_by("pk").first()
    old = Result.objects.get(run=run, item=item)
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Why?"})
    run, superseded = services.run_refresh(run=run, user=researcher, enqueue=False)
    compute(run)

    response = _get(researcher_client, "evaluation:run_superseded_jsonl", run.pk)
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-superseded.jsonl"'
    assert response["Content-Type"].startswith("application/x-ndjson")
    (line,) = [json.loads(text) for text in b"".join(response.streaming_content).decode().splitlines()]
    assert superseded == 1 and (line["run"], line["result_id"], line["item_id"], line["external_id"]) == (
        run.pk, old.pk, item.pk, item.external_id)
    assert (line["item_version"], line["current_version"], line["sample_index"], line["is_correct"]) == (
        1, 2, 0, old.is_correct)
    assert line["superseded_by"] == researcher.username and line["superseded_at"].startswith("20")
    assert line["row"]["id"] == old.pk and line["row"]["raw_output"] == old.raw_output
    assert line["row"]["messages"] == old.messages and line["row"]["item_version"] == 1
    current = Result.objects.get(run=run, item=item)  # asked again, at the new content: only in results.jsonl
    assert current.pk != old.pk and current.item_version == 2 and current.pk not in (line["result_id"], line["row"]["id"])
    assert address in _get(researcher_client, "evaluation:run_detail", run.pk).content.decode()

    others = Client()
    assert others.get(address).status_code == 302  # to the login
    others.force_login(annotator)
    assert others.get(address).status_code == 403
    assert researcher_client.get(reverse("evaluation:run_superseded_jsonl", args=[999999])).status_code == 404
