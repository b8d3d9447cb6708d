"""Agreement statistics against textbook values, and the agreement report and export."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.agreement import agreement_summary, cohen_kappa, counts_table, fleiss_kappa, percent_agreement

# Fleiss (1971) as reproduced on Wikipedia "Fleiss' kappa": 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def test_cohen_kappa_textbook_example():
    # 50 proposals: both yes 20, A yes/B no 5, A no/B yes 10, both no 15 -> p_o 0.70, p_e 0.50, kappa 0.40.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert percent_agreement(a, b) == pytest.approx(0.70)
    assert cohen_kappa(a, b) == pytest.approx(0.40)


def test_cohen_kappa_edge_cases():
    assert cohen_kappa(["x", "y"], ["x", "y"]) == pytest.approx(1.0)
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    assert cohen_kappa(["x", "x"], ["x", "x"]) is None  # p_e = 1: undefined
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["x"], [])


def test_fleiss_kappa_textbook_example():
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.2099, abs=5e-4)


def test_fleiss_kappa_two_raters_and_bad_tables():
    table = counts_table([["k", "k"], ["d", "d"], ["k", "d"], ["k", "k"]], ["k", "d"])
    assert table == [[2, 0], [0, 2], [1, 1], [2, 0]]
    assert fleiss_kappa(table) == pytest.approx(0.4667, abs=1e-3)
    assert fleiss_kappa([[2, 0], [2, 0]]) is None
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 0]])


def test_agreement_summary_per_pair():
    ratings = {1: {"a": True, "b": True}, 2: {"a": False, "b": True}, 3: {"a": False, "b": False, "c": False}}
    summary = agreement_summary(ratings, categories=[False, True])
    assert summary["items"] == 3 and summary["percent_agreement"] == pytest.approx(2 / 3)
    pairs = {p["raters"]: p for p in summary["pairs"]}
    assert pairs[("a", "b")]["items"] == 3 and pairs[("a", "c")]["items"] == 1
    assert summary["fleiss_items"] == 2


@pytest.mark.django_db
def test_agreement_report_page_and_exports(researcher_client, annotator, annotator2):
    from annotation.models import Stage
    from annotation.services import verification_submit

    from .workflow_support import make_items, set_k

    set_k(Stage.VERIFICATION, 2)
    items = make_items(4)
    plan = [("keep", [], "keep", []), ("delete", ["bias"], "delete", ["bias"]),
            ("keep", [], "delete", ["wrong_answer"]), ("keep", [], "keep", [])]
    for item, (d1, c1, d2, c2) in zip(items, plan):
        verification_submit(item_id=item.pk, user=annotator, decision=d1, criteria=c1, item_version=item.version)
        verification_submit(item_id=item.pk, user=annotator2, decision=d2, criteria=c2, item_version=item.version)
    page = researcher_client.get(reverse("annotation:agreement")).content.decode()
    assert "Keep / delete" in page and ("ann1 &amp; ann2" in page or "ann1 & ann2" in page)
    data = json.loads(researcher_client.get(reverse("annotation:agreement_export", args=["json"])).content)
    decision = next(q for q in data["questions"] if q["question"] == "decision")
    assert decision["items"] == 4 and decision["percent_agreement"] == pytest.approx(0.75)
    # keep/keep, delete/delete, keep/delete, keep/keep: p_o 0.75, p_e 0.75*0.5+0.25*0.5 = 0.5 -> kappa 0.5
    assert decision["pairs"][0]["cohen_kappa"] == pytest.approx(0.5)
    rows = list(csv.DictReader(io.StringIO(
        researcher_client.get(reverse("annotation:agreement_export", args=["csv"])).content.decode())))
    assert {r["question"] for r in rows} >= {"decision", "needs_media", "heavy_math", "no_daily_scenario",
                                             "wrong_answer", "bias"}
    assert any(r["pair"] == "ann1 & ann2" and float(r["cohen_kappa"]) == pytest.approx(0.5) for r in rows)
