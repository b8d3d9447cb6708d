"""evaluation.exports.tables: the leaderboard's CSV carries each free-text cell's accuracy per judge (judge only,
people only, judge-powered, each with its n), the figures the page and the API show, through csv_safety; and every
leaderboard format (the command's, the page's downloads, the API) carries a circular cell's circular accuracy ("right
only if every rotation is") wherever the page shows it, and nothing (never a 0) for a cell of another order."""
from __future__ import annotations

import csv
import functools
import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.exports import tables as exports
from evaluation.exports.tables import JUDGED_ROWS, LEADERBOARD_COLUMNS, latex_escape, leaderboard_csv
from evaluation.selectors.judge import free_text_accuracy
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from tests.evaluation.selectors.test_leaderboard import judged_and_reviewed
from tests.support.items import import_items


def _number(text: str) -> float | None:
    return None if text == "" else float(text)


@pytest.mark.django_db(transaction=True)
def test_the_csv_carries_a_free_text_cells_judge_people_and_powered_accuracy(free_text_run, annotator):
    judged_and_reviewed(free_text_run, annotator, reviews=16)
    [judged] = free_text_accuracy(run=free_text_run, fresh_only=True)
    text = leaderboard_csv(leaderboard(split="test"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == LEADERBOARD_COLUMNS
    mine = {r["row"]: r for r in rows if r["run"] == str(free_text_run.pk) and r["row"] in JUDGED_ROWS}
    assert set(mine) == set(JUDGED_ROWS)
    assert {r["judge"] for r in mine.values()} == {"builtin"}
    only = mine["judge_only"]
    assert (int(only["n"]), int(only["correct"]), int(only["n_reviewed"])) == (
        judged.counted, judged.correct, judged.reviewed)
    assert _number(only["accuracy"]) == pytest.approx(judged.accuracy)
    for kind, estimate in (("people_only", judged.people), ("judge_powered", judged.powered)):
        row = mine[kind]
        assert estimate["value"] is not None
        assert _number(row["accuracy"]) == pytest.approx(estimate["value"])
        assert (_number(row["ci95_low"]), _number(row["ci95_high"])) == (
            pytest.approx(estimate["low"]), pytest.approx(estimate["high"]))
        assert int(row["n"]) == estimate["n"] and int(row["n_reviewed"]) == estimate["n_reviewed"]
    # A multiple-choice cell has no judged rows.
    mc_runs = {r["run"] for r in rows if r["row"] == "method" and r["method"] != "free-text"}
    assert not [r for r in rows if r["row"] in JUDGED_ROWS and r["run"] in mc_runs]


# ----------------------------------------------------------------------------- circular accuracy in every format

def _page_circular(page: str, cell) -> tuple[float, int] | None:
    """The circular figure the leaderboard page shows in a cell ("circular 16.7 (20 items)"), None without one."""
    segment = page.split(f'<a href="/evaluation/runs/{cell.run.pk}/">', 1)[1].split("</td>", 1)[0]
    found = re.search(r"circular (\S+) \((\d+) items\)", segment)
    return None if found is None else (float(found.group(1)), int(found.group(2)))


def _csv_cells(text: str, table) -> dict:
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["row"] == "method"]
    return {int(r["run"]): (_number(r.get("circular_accuracy", "")),
                            None if not r.get("circular_n") else int(r["circular_n"])) for r in rows}


def _json_cells(text: str, table) -> dict:
    data = json.loads(text)
    cells = data["cells"] if isinstance(data, dict) else data
    return {c["run"]: (c.get("circular_accuracy"), c.get("circular_n")) for c in cells}


def _latex_cells(text: str, table) -> dict:
    """Each cell's Circ. column (in %), found by the header of its endpoint's column group."""
    lines = [line.removesuffix(r" \\") for line in text.splitlines()]
    heads = next(line for line in lines if line.startswith("Method & ")).split(" & ")[1:]
    per = len(heads) // len(table.endpoints)
    at = heads[:per].index("Circ.") if "Circ." in heads[:per] else None
    out = {}
    for row in table.rows:
        parts = next(line for line in lines if line.startswith(latex_escape(row["method"].paper_label) + " & "))
        parts = parts.split(" & ")[1:]
        for j, cell in enumerate(row["cells"]):
            if cell is not None:
                shown = "--" if at is None else parts[j * per + at]
                out[cell.run.pk] = (None if shown == "--" else float(shown) / 100, None)
    return out


def _text_cells(text: str, table) -> dict:
    """Each cell's line (its run id in columns 58-63): the last two columns when the header has "circ %"."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("method "))
    circular = "circ %" in lines[header]
    out = {}
    for line in lines[header + 1:]:
        if not line[58:63].strip().isdigit():
            continue  # a baseline's line
        value, n = line.split()[-2:] if circular else ("--", "--")
        out[int(line[58:63])] = (None if value == "--" else float(value) / 100, None if n == "--" else int(n))
    return out


#: How to read each leaderboard file's cells: {run: (circular accuracy, circular n)} (n None where not shown).
READERS = {"csv": _csv_cells, "json": _json_cells, "tex": _latex_cells, "latex": _latex_cells,
           "table": _text_cells}


@pytest.mark.django_db
def test_every_leaderboard_format_carries_the_circular_accuracy_wherever_the_page_shows_it(
        detectbench_dir, compute, researcher_client):
    from evaluation.management.commands.leaderboard import WRITERS
    from evaluation.views.tables import CONTENT_TYPES

    import_items(detectbench_dir / "test.jsonl", split="test", limit=16)
    launch = functools.partial(services.run_launch, split="test", limit=12, enqueue=False)
    circular = [compute(launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive",
                               option_order="circular")),
                compute(launch(endpoint=services.endpoint_for_cli(builtin="random"), method="self-cot",
                               option_order="circular", samples=2))]
    original = compute(launch(endpoint=services.endpoint_for_cli(builtin="first-option"), method="naive"))
    # Every writer of a leaderboard in evaluation.exports.tables is a format of the command (none left out).
    writers = {name for name, f in vars(exports).items() if name.startswith("leaderboard_") and callable(f)}
    assert writers - {"leaderboard_rows"} == {f.__name__ for f in WRITERS.values()}
    queries = {"runs=" + ",".join(str(r.pk) for r in [*circular, original]): ["--runs", ",".join(
                   str(r.pk) for r in [*circular, original])],
               "split=test&option_order=circular": ["--split", "test", "--option-order", "circular"],
               "split=test": ["--split", "test"]}
    shown = 0
    for query, args in queries.items():
        table = leaderboard(**({"run_ids": [int(pk) for pk in query[5:].split(",")]} if query.startswith("runs=")
                               else {"split": "test", "option_order": "circular" if "circular" in query
                                     else "original"}))
        page = researcher_client.get(reverse("evaluation:leaderboard") + "?" + query).content.decode()
        files = {}
        for fmt in WRITERS:
            out = io.StringIO()
            call_command("leaderboard", *args, "--format", fmt, stdout=out)
            files[f"command {fmt}"] = (fmt, out.getvalue())
        for fmt in CONTENT_TYPES:  # the page's downloads: every format the export view answers
            response = researcher_client.get(reverse("evaluation:leaderboard_export", args=[fmt]) + "?" + query)
            if response.status_code != 404:
                assert response.status_code == 200, (fmt, response.content[:300])
                files[f"download {fmt}"] = (fmt, response.content.decode())
        files["api"] = ("json", json.dumps(api_get(researcher_client, query)))
        assert {"download csv", "download json", "download tex", "api"} <= set(files)
        for name, (fmt, text) in files.items():
            assert fmt in READERS, f"no reader for the leaderboard format {fmt}: add one"
            cells = READERS[fmt](text, table)
            assert set(cells) == {c.run.pk for c in table.cells}, name
            for cell in table.cells:
                on_page = _page_circular(page, cell)
                value, n = cells[cell.run.pk]
                if on_page is None:  # not circular: empty, never 0
                    assert cell.circular is None and value is None and n is None, (name, cell.run.pk)
                    continue
                shown += 1
                assert on_page == (pytest.approx(100 * cell.circular_accuracy, abs=0.05), cell.circular[1])
                places = 0.0005 if fmt in ("tex", "latex", "table") else 1e-12
                assert value == pytest.approx(cell.circular_accuracy, abs=places), (name, cell.run.pk, value)
                assert n in (None, on_page[1]), (name, cell.run.pk, n)
                if fmt in ("csv", "json", "table"):
                    assert n == on_page[1], (name, n)
    assert shown  # the circular cells were seen


def api_get(client, query: str) -> dict:
    response = client.get("/api/evaluation/leaderboard/?" + query)
    assert response.status_code == 200, response.content[:300]
    return response.json()
