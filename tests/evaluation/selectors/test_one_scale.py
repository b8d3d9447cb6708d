"""One scale for people and models (issue 21, point 3) on real DetectBench items: the built-in models' runs (each
endpoint x method x option order a respondent) and a study with three raters per item (each attempt a respondent)
fitted together; the researcher's page, its CSV and JSON files, its figure and the API say the same."""
import csv
import io
import random

import numpy as np
import pytest

from annotation.models import Item
from annotation.services import item_update
from evaluation.selectors.one_scale import one_scale
from evaluation.services import runs as services
from studies.services import attempt_start, question_open, response_submit, study_create, study_join
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(detectbench_dir, compute):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=40)
    runs = [compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method=method,
                                        split="test", enqueue=False))
            for model in ("first-option", "lexical", "random") for method in ("naive", "self-cot")]
    runs.append(compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive",
                                            split="test", option_order="permuted", enqueue=False)))
    items = list(Item.objects.filter(split="test").order_by("pk"))
    study = study_create(slug="scale", item_ids=[i.pk for i in items[:12]], per_participant=12, raters=3,
                         time_limit_seconds=600, status="open", completion_code="C")
    for p, skill in enumerate((1, 2, 3)):  # right on items whose pk modulo 4 is below skill
        attempt = attempt_start(attempt_id=study_join(study=study, participant_id=f"p{p}").pk)
        while (question := question_open(attempt=attempt)) is not None:
            item = Item.objects.get(pk=question.lease.item_id)
            right = item.pk % 4 < skill
            response_submit(token=attempt.token, position=question.lease.position,
                            chosen_option=item.answer_index if right else (item.answer_index + 1) % len(item.options))
    return runs, items


def test_people_and_models_are_fitted_together_on_the_items_at_their_versions(answered):
    runs, items = answered
    result = one_scale(split="test")
    assert result.model == "Rasch" and "fewer than" in result.reason and result.converged
    assert {r.key for r in result.models} == {f"run:{run.pk}" for run in runs} and len(result.people) == 3
    assert len(result.items) == 40 and result.answers == 7 * 40 + 3 * 12
    assert any("permuted" in r.label for r in result.models)
    for r in result.respondents:
        assert r.low < r.ability < r.high and r.se > 0
    # On the same 40 items, more right answers is a higher ability.
    models = sorted(result.models, key=lambda r: r.correct)
    assert all(a.ability <= b.ability + 1e-9 for a, b in zip(models, models[1:]))
    people = sorted(result.people, key=lambda r: r.correct)
    assert people[0].correct < people[-1].correct and people[0].ability < people[-1].ability
    # Harder items: fewer right answers.
    by_item = {i.item: i for i in result.items}
    rates = [(i.people_correct + i.model_correct) / (i.people_answers + i.model_answers) for i in result.items]
    assert np.corrcoef(rates, [i.difficulty for i in result.items])[0, 1] < -0.9
    assert by_item[items[0].pk].people_answers == 3 and by_item[items[20].pk].people_answers == 0
    contrasts = result.hard_for_people + result.hard_for_models
    assert contrasts and all(i.people_answers and i.model_answers for i in contrasts)
    # An item edited after its answers: those answers were to another text, so another item.
    item = items[0]
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Who?"})
    edited = [i for i in one_scale(split="test").items if i.item == item.pk]
    assert [(i.version, i.current) for i in edited] == [(1, False)]


@pytest.mark.parametrize("seed", range(2))
def test_rejected_items_are_left_out_of_the_scale_as_the_leaderboard_leaves_them(answered, seed):
    """Every answer to a rejected (deleted) item, a model's or a person's, is left out of the fit, and the notes say
    how many items went; the other answers stay whole."""
    runs, items = answered
    rng = random.Random(seed)
    rejected: set[int] = set()
    for _ in range(2):  # more items rejected each round, some of them in the study
        for pk in {i.pk for i in rng.sample(items, rng.randint(1, 4))} - rejected:
            item = Item.objects.get(pk=pk)
            item_update(item_id=pk, base_version=item.version, changes={}, status="rejected", note="deleted")
            rejected.add(pk)
        result = one_scale(split="test")
        in_study = len(rejected & {i.pk for i in items[:12]})
        assert not {i.item for i in result.items} & rejected and len(result.items) == 40 - len(rejected)
        assert {r.answers for r in result.models} == {40 - len(rejected)}
        assert {r.answers for r in result.people} == {12 - in_study}
        assert result.answers == len(runs) * (40 - len(rejected)) + 3 * (12 - in_study)
        assert f"{len(rejected)} deleted item(s) left out" in result.notes


def test_the_page_files_and_api_show_one_scale(answered, researcher_client):
    page = researcher_client.get("/evaluation/one-scale/", {"split": "test"})
    html = page.content.decode()
    assert page.status_code == 200 and "One scale for people and models" in html and "<svg" in html
    assert "Hard for people, easy for models" in html and "Hard for models, easy for people" in html
    assert "Naive · builtin:lexical · permuted" in html and "scale · attempt" in html
    assert "/evaluation/one-scale/" in researcher_client.get("/").content.decode()  # the navigation links to it
    api = researcher_client.get("/api/evaluation/one-scale/", {"split": "test"}).json()
    respondents = list(csv.DictReader(io.StringIO(researcher_client.get(
        "/evaluation/one-scale/respondents.csv", {"split": "test"}).content.decode())))
    items = list(csv.DictReader(io.StringIO(researcher_client.get(
        "/evaluation/one-scale/items.csv", {"split": "test"}).content.decode())))
    assert len(respondents) == len(api["respondents"]) == 10 and len(items) == len(api["items"]) == 40
    for row, r in zip(respondents, api["respondents"]):
        assert row["key"] == r["key"] and float(row["ability"]) == pytest.approx(r["ability"])
        assert [float(row["ci95_low"]), float(row["ci95_high"])] == pytest.approx(r["ci95"])
    assert {row["model"] for row in items} == {"Rasch"}
    assert researcher_client.get("/evaluation/one-scale/scale.json", {"split": "test"}).json()["items"] == api["items"]
    png = researcher_client.get("/evaluation/one-scale/figure.png", {"split": "test"})
    assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    forced = researcher_client.get("/api/evaluation/one-scale/", {"split": "test", "model": "2pl"}).json()
    assert forced["model"] == "2PL" and forced["items"][0]["discrimination_se"] is not None
    assert researcher_client.get("/evaluation/one-scale/figure.gif", {"split": "test"}).status_code == 404
    assert researcher_client.get("/api/evaluation/one-scale/", {"split": "nowhere"}).status_code == 400


def test_too_little_to_fit_says_why(detectbench_dir, researcher_client, client):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=5)
    page = researcher_client.get("/evaluation/one-scale/", {"split": "test"})
    assert page.status_code == 200 and "Too little to fit" in page.content.decode()
    assert researcher_client.get("/api/evaluation/one-scale/", {"split": "test"}).status_code == 409
    client.logout()
    assert client.get("/evaluation/one-scale/", {"split": "test"}).status_code in (302, 403)
