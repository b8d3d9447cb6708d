"""evaluation.views.judge: the judge page of the dashboard (launch a judge run, see configurations and runs, each
named by what it is; refusals as form errors) and the judge quality card's page, its CSV and its API (with
evaluation.apis.judge): for every role as the permission matrix says, the figures of the selector, the CSV
through csv_safety, a probe launched by a researcher only."""
import csv
import io
import re

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.forms.analysis import run_choice_label
from evaluation.models import JudgeRun, ModelEndpoint
from evaluation.selectors.judge_quality import judge_quality_card
from evaluation.services.judge import judge_config_builtin, judge_config_create
from tests.annotation.workflow_support import api_for, client_for
from tests.evaluation.selectors.test_judge_quality import reviewed_config

pytestmark = pytest.mark.django_db


def test_the_card_page_for_every_role(annotator, researcher, plain_user):
    config = judge_config_builtin()
    url = reverse("evaluation:judge_quality", args=[config.name])
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    assert client_for(plain_user).get(url).status_code == 403
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(annotator).post(url, {"judge_run": 1}).status_code == 403
    page = client_for(researcher).get(url)
    assert page.status_code == 200
    body = page.content.decode()
    for section in ("judge-agreement", "judge-calibration", "judge-spread", "judge-position", "judge-length",
                    "probe-form"):
        assert f'id="{section}"' in body
    assert client_for(researcher).get(reverse("evaluation:judge_quality", args=["no-such-judge"])).status_code == 404
    # The judge runs page links every configuration to its card.
    listing = client_for(researcher).get(reverse("evaluation:judge_run_list")).content.decode()
    assert url in listing


def test_the_page_csv_and_api_show_the_selectors_figures(annotator, researcher):
    config = reviewed_config(annotator, labels=60, reviews=40)
    card = judge_quality_card(config=config)
    body = client_for(researcher).get(reverse("evaluation:judge_quality", args=[config.name])).content.decode()
    weighted = card["agreement"]["weighted"]["accuracy"]
    assert f'data-value="{weighted["value"]:.17g}"' in body
    assert f'id="length-rho" data-value="{card["length"]["spearman"]["rho"]:.17g}"' in body

    response = client_for(researcher).get(reverse("evaluation:judge_quality_csv", args=[config.name]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    [row] = [r for r in rows if (r["section"], r["figure"], r["estimate"], r["aspect"])
             == ("agreement", "accuracy", "weighted", "")]
    assert float(row["value"]) == pytest.approx(weighted["value"]) and int(row["n"]) == weighted["n"]
    assert client_for(annotator).get(reverse("evaluation:judge_quality_csv", args=[config.name])).status_code == 403

    api = api_for(researcher).get(f"/api/evaluation/judge-configs/{config.name}/quality/")
    assert api.status_code == 200
    assert api.json()["agreement"]["weighted"]["accuracy"]["value"] == pytest.approx(weighted["value"])
    assert api.json()["length"]["spearman"]["n"] == 60
    assert api_for(annotator).get(f"/api/evaluation/judge-configs/{config.name}/quality/").status_code == 403
    assert api_for(researcher).get("/api/evaluation/judge-configs/no-such/quality/").status_code == 404


def test_a_probe_is_launched_by_a_researcher_from_the_card_and_the_api(free_text_run, researcher, annotator):
    from evaluation.services import judge as services

    config = judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
    url = reverse("evaluation:judge_quality", args=[config.name])
    refused = client_for(researcher).post(url, {"judge_run": judge_run.pk, "kind": "reversed", "sample": 0,
                                                 "seed": 0})
    assert refused.status_code == 400 and not JudgeRun.objects.exclude(probe="").exists()
    launched = client_for(researcher).post(url, {"judge_run": judge_run.pk, "kind": "reversed", "sample": 3,
                                                  "seed": 1})
    assert launched.status_code == 302
    probe = JudgeRun.objects.get(probe="reversed")
    assert (probe.config_id, probe.task, probe.n, probe.target_run_id) == (config.pk, "free-text", 3, free_text_run.pk)
    assert set(probe.targets) <= set(judge_run.targets)
    api = api_for(researcher).post(f"/api/evaluation/judge-configs/{config.name}/position-probes/",
                                   {"judge_run": judge_run.pk, "permutation": "rotated", "sample": 2}, format="json")
    assert api.status_code == 201 and api.json()["probe"] == "rotated" and api.json()["n"] == 2
    assert api_for(annotator).post(f"/api/evaluation/judge-configs/{config.name}/position-probes/",
                                   {"judge_run": judge_run.pk}, format="json").status_code == 403
    # A probe is not probed again; a judge run of another configuration is not this card's.
    again = api_for(researcher).post(f"/api/evaluation/judge-configs/{config.name}/position-probes/",
                                     {"judge_run": probe.pk}, format="json")
    assert again.status_code == 404


# The judge page.

@pytest.mark.django_db(transaction=True)
def test_launch_from_the_dashboard_and_see_the_run(researcher_client, free_text_run):
    run_page = researcher_client.get(f"/evaluation/runs/{free_text_run.pk}/").content.decode()
    assert f"/evaluation/judge/?run={free_text_run.pk}" in run_page
    page = researcher_client.get(f"/evaluation/judge/?run={free_text_run.pk}")
    assert page.status_code == 200 and "No judge runs yet." in page.content.decode()

    response = researcher_client.post("/evaluation/judge/", {"config": "builtin", "run": free_text_run.pk})
    assert response.status_code == 302
    judge_run = JudgeRun.objects.get()
    assert (judge_run.task, judge_run.target_run_id, judge_run.status) == ("free-text", free_text_run.pk, "queued")
    page = researcher_client.get("/evaluation/judge/").content.decode()
    # Named by the judge and the run it judged (method, model, ...), not by ids; polled while queued.
    assert f"builtin on {run_choice_label(free_text_run)}" in page and 'hx-trigger="every 2s"' in page
    partial = researcher_client.get("/evaluation/judge/", headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith('<div id="judge-runs"')

    refused = researcher_client.post("/evaluation/judge/", {"config": "builtin", "split": "test"})
    assert refused.status_code == 200 and "the task is one of" in refused.content.decode()
    missing = researcher_client.post("/evaluation/judge/", {"config": "nope", "split": "test", "task": "screening"})
    assert missing.status_code == 200 and "no judge configuration" in missing.content.decode()
    assert JudgeRun.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_annotators_do_not_reach_the_judge_page(annotator_client):
    assert annotator_client.get("/evaluation/judge/").status_code in (302, 403)


# Names on the judge page.

def _options(html: str, name: str) -> dict[str, str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    return dict(re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select))


@pytest.mark.django_db(transaction=True)
def test_everything_is_chosen_from_lists_that_name_it(researcher_client, free_text_run):
    endpoint = ModelEndpoint.objects.create(name="judge-gpt", kind="openai", base_url="http://127.0.0.1:9/v1",
                                            model="gpt-4o-mini")
    judge_config_create(name="gpt-judge", belief_source="logprob", endpoint=endpoint, task="free-text")
    html = researcher_client.get("/evaluation/judge/").content.decode()
    configs = _options(html, "config")
    assert configs["builtin"] == "builtin · offline, built in"
    assert configs["gpt-judge"] == "gpt-judge · judge-gpt (gpt-4o-mini)"
    runs = _options(html, "run")
    assert runs[str(free_text_run.pk)] == f"{run_choice_label(free_text_run)} · test"
    assert not any(label.startswith("run ") for label in runs.values())
    assert _options(html, "split") == {"": "—", "test": "test"}


@pytest.mark.django_db(transaction=True)
def test_a_judge_run_is_named_by_its_judge_and_the_run_it_judged(researcher_client, free_text_run):
    response = researcher_client.post("/evaluation/judge/", {"config": "builtin", "run": free_text_run.pk},
                                      follow=True)
    text = response.content.decode()
    name = f"builtin on {run_choice_label(free_text_run)}"
    assert f"Judge run launched: {name} (" in text
    row = re.search(r'<td class="judge-run-name" id="judge-run-\d+">([^<]*)</td>', text).group(1)
    assert row == name and "run #" not in text
    screening = researcher_client.post("/evaluation/judge/", {"config": "builtin", "task": "screening",
                                                              "split": "test", "limit": 2}, follow=True)
    assert "builtin on split test" in screening.content.decode()
