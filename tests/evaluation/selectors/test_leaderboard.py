"""The leaderboard (paper Table 4): like for like (one split or the chosen runs' common items, fresh rows only),
every cell with its n and interval, baselines and humans per column, exact McNemar against a reference with
Holm's correction, equal to what `evaluate` prints for the same runs. A free-text cell (issue 21, point 1) shows
its judge-powered accuracy beside the judge-only and the people-only figures, each with its n, on the page and in
the API, equal to the run page's (evaluation.selectors.judge.free_text_accuracy) over the cell's items."""
import io
import json
import re
from contextlib import redirect_stderr

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from annotation.models import Item
from annotation.services import item_update
from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from evaluation.models import Result
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.judge import free_text_accuracy
from evaluation.selectors.leaderboard import common_item_ids, leaderboard
from evaluation.services import judge as judge_services
from evaluation.services import runs as services
from foundation.errors import Invalid
from studies.services import attempt_start, question_open, response_submit, study_create, study_join
from tests.annotation.workflow_support import api_for, client_for
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


def _launch(model, method="naive", split="test", **kwargs):
    return services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method=method, split=split,
                               enqueue=False, **kwargs)


@pytest.fixture
def test_items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=40)
    return list(Item.objects.filter(split="test").order_by("pk"))


def _outcomes(run):
    return {(r.item_id, r.item_version): r.is_correct for r in Result.objects.filter(run=run, sample_index=0)}


def test_runs_on_different_splits_never_share_a_cell_or_a_comparison(test_items, detectbench_dir, compute):
    import_items(detectbench_dir / "train.jsonl", split="train", limit=10)
    on_test, on_train = compute(_launch("first-option")), compute(_launch("first-option", split="train"))
    test_table, train_table = leaderboard(split="test"), leaderboard(split="train")
    assert [c.run.pk for c in test_table.cells] == [on_test.pk] and test_table.cells[0].metrics.n == 40
    assert [c.run.pk for c in train_table.cells] == [on_train.pk] and train_table.cells[0].metrics.n == 10
    with pytest.raises(Invalid, match="Choose a split"):
        leaderboard()
    with pytest.raises(Invalid, match="same method on the same endpoint"):
        leaderboard(run_ids=[on_test.pk, on_train.pk])
    lexical_train = compute(_launch("lexical", split="train"))
    with pytest.raises(Invalid, match="different splits"):
        leaderboard(run_ids=[on_test.pk, lexical_train.pk])
    with pytest.raises(Invalid, match="share no items"):
        run_comparison(a=on_test, b=lexical_train)


def test_the_latest_finished_run_fills_a_cell_and_each_option_order_is_its_own_table(test_items, compute):
    older = compute(_launch("lexical"))
    newer = compute(_launch("lexical"))
    permuted = compute(_launch("lexical", option_order="permuted"))
    services.run_launch(endpoint=newer.endpoint, method="naive", split="test", enqueue=False)  # queued: ignored
    assert [c.run.pk for c in leaderboard(split="test").cells] == [newer.pk] != [older.pk]
    assert [c.run.pk for c in leaderboard(split="test", option_order="permuted").cells] == [permuted.pk]


def test_cells_have_n_wilson_interval_first_option_and_paired_tests_equal_statsmodels(test_items, compute):
    runs = {(model, method): compute(_launch(model, method))
            for model in ("first-option", "lexical", "random") for method in ("naive", "self-cot")}
    reference = runs[("lexical", "naive")]
    table = leaderboard(split="test", reference=f"naive@{reference.endpoint.name}")
    assert len(table.cells) == 6 and table.reference.run.pk == reference.pk
    others = [c for c in table.cells if not c.is_reference]
    ref_outcomes = _outcomes(reference)
    expected_p = []
    for cell in table.cells:
        rows = Result.objects.filter(run=cell.run)
        correct, n = rows.filter(is_correct=True).count(), rows.count()
        assert (cell.metrics.n, cell.metrics.correct) == (n, correct) == (40, correct)
        assert (cell.metrics.ci_low, cell.metrics.ci_high) == pytest.approx(
            proportion_confint(correct, n, method="wilson"))
        assert cell.metrics.first_option_baseline == rows.filter(answer_first=True).count() / n
        if cell.is_reference:
            assert cell.paired is None and cell.p_holm is None
            continue
        mine = _outcomes(cell.run)
        b = sum(1 for k in ref_outcomes if ref_outcomes[k] and not mine[k])
        c = sum(1 for k in ref_outcomes if not ref_outcomes[k] and mine[k])
        assert cell.paired.discordant == (b, c) and cell.paired.n == 40 and cell.paired.dropped == 0
        assert cell.p_value == cell.paired.p_value == mcnemar([[0, b], [c, 0]], exact=True).pvalue
        expected_p.append(cell.p_value)
    holm = multipletests(expected_p, method="holm")[1]
    assert [c.p_holm for c in others] == pytest.approx(list(holm))
    assert all(c.significant == (c.p_holm < 0.05) for c in others)
    # The built-in first option answers the same under every method: its two cells agree item by item.
    first = [c for c in table.cells if c.endpoint.model == "first-option"]
    assert first[0].metrics.accuracy == first[1].metrics.accuracy == first[0].metrics.first_option_baseline
    # Baseline rows per column.
    rows = {b.key: b for b in table.baselines}
    assert set(rows) == {"first-option", "random"}
    for endpoint, cell in zip(table.endpoints, rows["first-option"].cells):
        column = [c for c in table.cells if c.endpoint.pk == endpoint.pk]
        # Two methods' rows, one item each: n is the 40 items, and the interval no narrower than theirs.
        assert cell.value == column[0].metrics.first_option_baseline and cell.n == 40
        low, high = proportion_confint(cell.value * 40, 40, method="wilson")
        assert cell.high - cell.low >= high - low
    assert all(c.value == pytest.approx(0.25) for c in rows["random"].cells)  # every item has 4 options


def test_common_items_only_and_chosen_runs_use_the_items_every_cell_has(test_items, compute):
    wide = compute(_launch("first-option"))
    narrow = compute(_launch("lexical", ids=[i.pk for i in test_items[5:25]]))
    mixed = leaderboard(split="test")
    assert sorted(c.metrics.n for c in mixed.cells) == [20, 40] and mixed.n_range == (20, 40)
    common = leaderboard(split="test", common=True, reference=f"naive@{wide.endpoint.name}")
    assert [c.metrics.n for c in common.cells] == [20, 20] and common.common_items == 20
    assert "20 items common to every cell" in common.scope
    chosen = leaderboard(run_ids=[wide.pk, narrow.pk])
    assert [c.metrics.n for c in chosen.cells] == [20, 20] and f"#{wide.pk}, #{narrow.pk}" in chosen.scope
    assert common_item_ids([wide, narrow]) == sorted(i.pk for i in test_items[5:25])
    # Split mode pairs on what both have too, and says what it dropped.
    paired = leaderboard(split="test", reference=f"naive@{wide.endpoint.name}")
    cell = next(c for c in paired.cells if c.run.pk == narrow.pk)
    assert (cell.paired.n, cell.paired.ref_only, cell.paired.other_only) == (20, 20, 0)


def test_an_unknown_reference_is_refused(test_items, compute):
    compute(_launch("first-option"))
    with pytest.raises(Invalid, match="No cell 'naive@nowhere'"):
        leaderboard(split="test", reference="naive@nowhere")


def _answer_all(study, *, right: bool, participants: int):
    for p in range(participants):
        attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"{right}-{p}").pk)
        while (question := question_open(attempt=attempt)) is not None:
            item = Item.objects.get(pk=question.lease.item_id)
            option = item.answer_index if right else (item.answer_index + 1) % len(item.options)
            response_submit(token=attempt.token, position=question.lease.position, chosen_option=option)


def test_humans_answer_the_same_items_at_the_same_versions(test_items, compute):
    run = compute(_launch("lexical"))
    asked = [i.pk for i in test_items[:6]]
    study = study_create(slug="humans", item_ids=asked, per_participant=6, raters=2, time_limit_seconds=600,
                         status="open", completion_code="C")
    _answer_all(study, right=True, participants=1)
    _answer_all(study, right=False, participants=1)
    humans = next(b for b in leaderboard(split="test").baselines if b.key == "humans").cells[0]
    assert (humans.items, humans.n, humans.value) == (6, 12, 0.5)
    item = test_items[0]
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Who?"})
    # The item changed: its answers and the model's row are both out of the table.
    table = leaderboard(split="test")
    humans = next(b for b in table.baselines if b.key == "humans").cells[0]
    assert (humans.items, humans.n) == (5, 10) and table.cells[0].metrics.n == 39
    assert run.pk == table.cells[0].run.pk


def _evaluate(*args) -> list[dict]:
    out = io.StringIO()
    with redirect_stderr(io.StringIO()):
        call_command("evaluate", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


@pytest.mark.django_db(transaction=True)
def test_the_leaderboard_command_prints_what_evaluate_printed(detectbench_dir, tmp_path):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=120)
    lines = _evaluate("--builtin", "lexical", "--method", "naive,self-cot", "--split", "test", "--wait",
                      "--in-process")
    lines += _evaluate("--builtin", "first-option", "--method", "naive", "--split", "test", "--wait", "--in-process")
    out = tmp_path / "board.json"
    with redirect_stderr(io.StringIO()):
        call_command("leaderboard", "--split", "test", "--reference", "naive@builtin:lexical", "--format", "json",
                     "--out", str(out))
    cells = {c["run"]: c for c in json.loads(out.read_text())["cells"]}
    assert set(cells) == {line["run"] for line in lines}
    for line in lines:
        cell = cells[line["run"]]
        assert (cell["n"], cell["correct"], cell["accuracy"], cell["method"]) == (
            line["n"], line["correct"], line["accuracy"], line["method"])
        assert cell["accuracy_ci95"] == pytest.approx(line["accuracy_ci95"])
        assert cell["keyinfo"] == pytest.approx(line["keyinfo"], abs=1e-12)
        assert cell["first_option_baseline"] == line["first_option_baseline"]
        assert set(cell) >= {"endpoint", "discordant", "p_value", "p_holm"}
    reference = next(c for c in cells.values() if c["is_reference"])
    assert reference["endpoint"] == "builtin:lexical" and reference["p_value"] is None
    assert all(len(c["discordant"]) == 2 and c["p_holm"] >= c["p_value"] for c in cells.values()
               if not c["is_reference"])
    for fmt, marker in (("table", "Leaderboard: split test"), ("csv", "row,method,endpoint"),
                        ("latex", r"\toprule")):
        text = io.StringIO()
        call_command("leaderboard", "--split", "test", "--format", fmt, stdout=text)
        assert marker in text.getvalue()
    with pytest.raises(CommandError, match="give --split"):
        call_command("leaderboard")
    with pytest.raises(CommandError, match="No cell"):
        call_command("leaderboard", "--split", "test", "--reference", "naive@nowhere")


def test_database_metrics_equal_the_rows_metrics_for_samples_and_circular_runs(test_items, compute):
    from evaluation.selectors import runs as selectors
    from evaluation.selectors.aggregates import metrics_many

    runs = [compute(_launch("random", samples=2, limit=15)), compute(_launch("lexical", option_order="circular",
                                                                             limit=15)),
            compute(_launch("first-option", limit=15))]
    found = metrics_many(runs=runs)
    for run in runs:
        python = selectors.run_summary(run=run).metrics
        sql = found[run.pk][0]
        assert sql.as_dict() == pytest.approx(python.as_dict()), run


def test_circular_cells_pair_on_items_right_in_every_rotation(test_items, compute):
    lexical = compute(_launch("lexical", option_order="circular", limit=20))
    first = compute(_launch("first-option", option_order="circular", limit=20))
    random_run = compute(_launch("random", option_order="circular", limit=20))
    table = leaderboard(split="test", option_order="circular", reference=f"naive@{lexical.endpoint.name}")
    assert {c.run.pk for c in table.cells} == {lexical.pk, first.pk, random_run.pk}

    def verdicts(run):
        out = {}
        for r in Result.objects.filter(run=run, sample_index__lt=run.rotations):
            out.setdefault(r.item_id, []).append(r.is_correct)
        return {i: all(v) for i, v in out.items() if len(v) == run.rotations}

    ref = verdicts(lexical)
    for cell in table.cells:
        mine = verdicts(cell.run)
        assert cell.circular == (sum(mine.values()), len(mine)) and cell.as_json()["circular_n"] == 20
        if cell.is_reference:
            continue
        b = sum(1 for i in ref if ref[i] and not mine[i])
        c = sum(1 for i in ref if not ref[i] and mine[i])
        assert cell.paired.discordant == (b, c) and cell.paired.n == 20
        assert cell.p_value == mcnemar([[0, b], [c, 0]], exact=True).pvalue
    assert not any(verdicts(first).values())  # no item is first in every rotation


@pytest.mark.django_db(transaction=True)  # two writes of one run: the upsert's staging table empties on commit
def test_cached_counts_follow_item_edits_and_relaunches(test_items, compute):
    run = compute(_launch("lexical"))
    assert leaderboard(split="test").cells[0].metrics.n == 40  # counted, then cached (the run is finished)
    assert leaderboard(split="test").cells[0].metrics.n == 40
    item = test_items[1]
    item_update(item_id=item.pk, base_version=item.version, changes={"context": item.context + " Then it snowed."})
    assert leaderboard(split="test").cells[0].metrics.n == 39  # the edit changes which rows are fresh
    row = Result.objects.get(run=run, item=test_items[2])
    Result.objects.filter(pk=row.pk).update(error="HTTP 500")
    services.run_resume(run=run, enqueue=False)
    assert leaderboard(split="test").cells == []  # queued again: not finished, not in the table
    compute(run)
    cell = leaderboard(split="test").cells[0]
    assert cell.run.pk == run.pk and cell.metrics.n == 39 and cell.metrics.errors == 0


# Free-text cells judged.

def judged_and_reviewed(run, annotator, reviews: int):
    config = judge_services.judge_config_builtin()
    judge_services.judge_run_execute_in_process(
        judge_run=judge_services.judge_run_launch(config=config, run=run, enqueue=False))
    belief_queue_policy_set(queue_id=config.queue_id, random_share=1.0)  # every hand-out a uniform draw
    for _ in range(reviews):
        lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
        if lease is None:
            break
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=lease.label.choices[0])
    return config


@pytest.mark.django_db(transaction=True)
def test_a_free_text_cell_shows_judge_people_and_powered_with_their_n(free_text_run, annotator, researcher):
    judged_and_reviewed(free_text_run, annotator, reviews=16)
    table = leaderboard(split="test")
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


@pytest.mark.django_db(transaction=True)
def test_the_cell_restricts_the_judged_results_to_the_tables_items(free_text_run, annotator):
    judged_and_reviewed(free_text_run, annotator, reviews=0)
    item_ids = sorted(free_text_run.item_ids)[:5]
    [some] = free_text_accuracy(run=free_text_run, item_ids=item_ids)
    [every] = free_text_accuracy(run=free_text_run)
    assert some.n == 5 < every.n
    # Without reviews the powered figure is refused with its reason, never a made-up interval.
    assert every.powered["value"] is None and every.powered["reason"]
