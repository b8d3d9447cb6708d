"""Issue 19: every CSV safe by construction.

1. One writer: no module of the apps imports `csv` or `defusedcsv` except `foundation/csv_safety.py`, so a CSV
   can only be written through it (the study export wrote with `csv.DictWriter` and let a participant's
   `PROLIFIC_PID==HYPERLINK(...)` and a refused answer's chosen option into the researcher's spreadsheet).
2. Every route that answers `text/csv` is found from the URL configuration (no list of CSV routes is kept:
   each route but the admin's, whose pages are Django's own, is asked by GET with every format, the query
   parameters a researcher's download links carry and `Accept: text/csv`), in a database whose every text
   field holds a formula (tests/support/hostile_world.py), and no cell of any of them starts a formula.
"""
from __future__ import annotations

import ast
import csv
import io
import re
from collections import defaultdict

import pytest
from django.test import Client

from tests.conftest import REPO_DIR
from tests.support import hostile_world, routes

# ---- 1. one writer

APP_PACKAGES = ("foundation", "annotation", "studies", "evaluation", "detectbench_web")
THE_WRITER = "foundation.csv_safety"
CSV_MODULES = {"csv", "_csv", "defusedcsv"}


def _imported(node: ast.AST) -> list[str]:
    """The absolute modules an import statement (at the top or inside a function) or an import by name reads.
    Relative imports (`from . import x`) stay inside the apps and are not CSV modules."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [node.module or ""]
    if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("import_module", "__import__")):
        return [f"{node.args[0].value} by name"]
    return []


def csv_imports(root, packages=APP_PACKAGES) -> list[str]:
    """Every place a module of the apps (migrations and commands included) imports a CSV module, other than the
    one writer: `import csv`, `from csv import ...`, `from defusedcsv import csv`, and `import_module("csv")` or
    `__import__("csv")` with the name written out."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if ".".join(relative.with_suffix("").parts) == THE_WRITER:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                for imported in _imported(node):
                    if re.split(r"[. ]", imported)[0] in CSV_MODULES:
                        found.append(f"{relative}:{node.lineno}: imports {imported}")
    return sorted(found, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_no_module_but_the_one_writer_imports_csv():
    found = csv_imports(REPO_DIR)
    assert not found, ("write CSV with foundation.csv_safety (writer, DictWriter), never with csv or defusedcsv:\n"
                       + "\n".join(found))


def test_the_one_writer_is_where_the_check_expects_it():
    assert (REPO_DIR / "foundation" / "csv_safety.py").exists()
    text = (REPO_DIR / "foundation" / "csv_safety.py").read_text()
    assert "from defusedcsv import" in text


def test_the_check_finds_every_way_to_import_csv(tmp_path):
    app = tmp_path / "studies"
    (app / "views").mkdir(parents=True)
    (app / "views" / "__init__.py").write_text("")
    (app / "views" / "export.py").write_text("import csv\n")
    (app / "a.py").write_text("def f():\n    from csv import DictWriter\n")
    (app / "b.py").write_text("from defusedcsv import csv as c\n")
    (app / "c.py").write_text("import importlib\nw = importlib.import_module('csv')\nx = __import__('_csv')\n")
    (app / "d.py").write_text("from foundation import csv_safety\nimport csvkit_like_name\n")
    foundation = tmp_path / "foundation"
    foundation.mkdir()
    (foundation / "csv_safety.py").write_text("import csv\nfrom defusedcsv import csv as d\n")
    found = csv_imports(tmp_path, packages=("studies", "foundation"))
    assert found == [
        "studies/a.py:2: imports csv",
        "studies/b.py:1: imports defusedcsv",
        "studies/c.py:2: imports csv by name",
        "studies/c.py:3: imports _csv by name",
        "studies/views/export.py:1: imports csv",
    ]


# ---- 2. every CSV route, every cell

#: A cell a spreadsheet reads as a formula: one starting with = + - @ | % or with a tab, carriage return or
#: line feed (stripped before the formula is read), unless it is a plain number.
TRIGGERS = ("=", "+", "-", "@", "|", "%", "\t", "\r", "\n")
NUMBER = re.compile(r"^[+-]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
#: Every format a file route is asked for, and the query parameters of the site's download links (the
#: leaderboard by split or by runs, a comparison of two runs, DRF's ?format=); then the same with
#: `Accept: text/csv`.
FORMATS = ("csv", "tsv", "txt", "json", "jsonl", "tex")


def queries(values: dict) -> list[dict]:
    """No query; a split, two runs to compare and ?format=csv; the runs of a leaderboard by runs."""
    a, b = values["runs"]
    return [{}, {"split": "test", "a": a, "b": b, "format": "csv"}, {"runs": f"{a},{b}", "format": "csv"}]


def unsafe(cell: str) -> bool:
    return cell.startswith(TRIGGERS) and not NUMBER.match(cell)


def carries_a_payload(cell: str) -> bool:
    text = cell[1:] if cell.startswith("'") else cell
    return any(p.replace("|", "\\|") in text or p in text for p in hostile_world.PAYLOADS)


def _is_csv(response) -> bool:
    return (response.get("Content-Type", "").startswith("text/csv")
            or ".csv" in response.get("Content-Disposition", ""))


def _body(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return raw.decode("utf-8-sig")


@pytest.fixture
def hostile(db, django_user_model):
    values = hostile_world.build()
    researcher = django_user_model.objects.create_user("csv-researcher", password="pw", is_staff=True)
    from django.contrib.auth.models import Group

    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    return client, values


def discover_csv(client: Client, values: dict) -> dict[str, dict[str, object]]:
    """{route name: {address: response}} of every GET that answers text/csv, found by asking every route."""
    found: dict[str, dict[str, object]] = defaultdict(dict)
    for route in routes.all_routes(admin=False):
        for url in routes.urls(route, values, formats=FORMATS):
            asked = [(query, {}) for query in queries(values)] + [({}, {"HTTP_ACCEPT": "text/csv"})]
            for query, headers in asked:
                response = client.get(url, query, **headers)
                if _is_csv(response):
                    address = url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
                    found[route.name][address] = response
    return found


def test_every_csv_route_neutralises_every_formula_in_every_cell(hostile):
    client, values = hostile
    found = discover_csv(client, values)
    # Today: the study export, the agreement and judge-trust exports, the leaderboard, the run list, a run's
    # question types and the comparison of two runs. A floor, not a list: a route that stopped answering CSV
    # (or a discovery that stopped finding them) fails here.
    assert len(found) >= 7, f"CSV routes found: {sorted(found)}"
    failures, checked, with_payload = [], 0, defaultdict(int)
    for name, responses in sorted(found.items()):
        for address, response in responses.items():
            if response.status_code != 200:
                failures.append(f"{name} {address}: {response.status_code}")
                continue
            for r, row in enumerate(csv.reader(io.StringIO(_body(response)))):
                for c, cell in enumerate(row):
                    checked += 1
                    with_payload[name] += carries_a_payload(cell)
                    if unsafe(cell):
                        failures.append(f"{name} {address} row {r + 1} column {c + 1}: {cell[:60]!r}")
    print(f"\nCSV routes: {len(found)}, responses {sum(map(len, found.values()))}, cells {checked}; "
          f"cells with a payload per route: {dict(with_payload)}")
    assert not failures, f"{len(failures)} unsafe cells or failed exports:\n" + "\n".join(failures[:40])
    assert sum(with_payload.values()) >= 50, "the payloads did not reach the exports: the world is wrong"


def test_the_study_export_neutralises_participant_ids_and_refused_answers(hostile):
    """The issue's replay: a participant joining with PROLIFIC_PID==HYPERLINK(...) (and formulas as STUDY_ID
    and SESSION_ID), and a refused answer whose chosen option is a formula."""
    client, values = hostile
    response = client.get(f"/studies/{values['study']}/export.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    refused = [row for row in rows if row["record"] == "refused"]
    assert len(refused) == len(hostile_world.PAYLOADS)

    def neutralised(values) -> set[str]:
        return {"'" + value.replace("|", "\\|") for value in values}

    joins = hostile_world.JOINS
    assert {row["participant_id"] for row in rows} == neutralised(pid.strip() for pid, _, _ in joins)
    assert {row["external_study_id"] for row in rows} == neutralised(study_id for _, study_id, _ in joins)
    assert {row["session_id"] for row in rows} == neutralised(session_id for _, _, session_id in joins)
    assert {row["chosen_option"] for row in refused} == neutralised(hostile_world.REPLAYS)
