"""evaluation.selectors.leaderboard (issue 21, point 1, the leaderboard's part): a free-text cell shows its
judge-powered accuracy beside the judge-only and the people-only figures, each with its n, on the page and in
the API, equal to the run page's (evaluation.selectors.judge.free_text_accuracy) over the cell's items."""
import re

import pytest
from django.urls import reverse

from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from evaluation.selectors import leaderboard as boards
from evaluation.selectors.judge import free_text_accuracy
from evaluation.services import judge as services
from tests.annotation.workflow_support import api_for, client_for

pytestmark = pytest.mark.django_db(transaction=True)


def judged_and_reviewed(run, annotator, reviews: int):
    config = services.judge_config_builtin()
    services.judge_run_execute_in_process(judge_run=services.judge_run_launch(config=config, run=run, enqueue=False))
    belief_queue_policy_set(queue_id=config.queue_id, random_share=1.0)  # every hand-out a uniform draw
    for _ in range(reviews):
        lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
        if lease is None:
            break
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=lease.label.choices[0])
    return config


def test_a_free_text_cell_shows_judge_people_and_powered_with_their_n(free_text_run, annotator, researcher):
    judged_and_reviewed(free_text_run, annotator, reviews=16)
    table = boards.leaderboard(split="test")
    [cell] = [c for c in table.cells if c.method == "free-text"]
    [judged] = cell.judged
    [expected] = free_text_accuracy(run=free_text_run, fresh_only=True)
    assert judged == expected
    assert judged.powered["value"] is not None and judged.powered["n"] == judged.n
    assert judged.people["value"] is not None and judged.powered["n_reviewed"] >= 10
    as_json = cell.as_json()["judged"][0]
    assert as_json["config"] == "builtin"
    assert as_json["judge"] == {"value": judged.accuracy, "n": judged.counted}
    assert as_json["powered"] == judged.powered and as_json["people"] == judged.people
    # A multiple-choice cell has none.
    assert all(c.as_json()["judged"] is None for c in table.cells if c.method != "free-text")

    page = client_for(researcher).get(reverse("evaluation:leaderboard"), {"split": "test"}).content.decode()
    block = page[page.index(f'id="judged-{free_text_run.pk}-builtin"'):]
    block = block[:block.index("</div>")]
    value = float(re.search(r'data-value="([^"]+)"', block).group(1))
    assert value == pytest.approx(judged.powered["value"], abs=1e-12)
    assert f'{judged.powered["low"]:.3f}, {judged.powered["high"]:.3f}' in block
    assert f'n = {judged.powered["n"]}, {judged.powered["n_reviewed"]} reviewed' in block
    assert f'(n = {judged.counted})' in block

    api = api_for(researcher).get("/api/evaluation/leaderboard/", {"split": "test"})
    assert api.status_code == 200
    [row] = [c for c in api.json()["cells"] if c["method"] == "free-text"]
    assert row["judged"][0]["powered"]["value"] == pytest.approx(judged.powered["value"])


def test_the_cell_restricts_the_judged_results_to_the_tables_items(free_text_run, annotator):
    judged_and_reviewed(free_text_run, annotator, reviews=0)
    item_ids = sorted(free_text_run.item_ids)[:5]
    [some] = free_text_accuracy(run=free_text_run, item_ids=item_ids)
    [every] = free_text_accuracy(run=free_text_run)
    assert some.n == 5 < every.n
    # Without reviews the powered figure is refused with its reason, never a made-up interval.
    assert every.powered["value"] is None and every.powered["reason"]
