"""evaluation.exports.tables: the leaderboard's CSV carries each free-text cell's accuracy per judge (judge only,
people only, judge-powered, each with its n), the figures the page and the API show, through csv_safety."""
from __future__ import annotations

import csv
import io

import pytest

from evaluation.exports.tables import JUDGED_ROWS, LEADERBOARD_COLUMNS, leaderboard_csv
from evaluation.selectors.judge import free_text_accuracy
from evaluation.selectors.leaderboard import leaderboard
from tests.evaluation.selectors.test_leaderboard import judged_and_reviewed


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
