"""The judge page names what a researcher chooses and reads: judge configurations with the endpoint that answers
for them, free-text runs by method, model, option order and date (not "run 7: free-text on 2"), the splits the items
have, and each judge run by its judge and what it judged."""
import re

import pytest

from evaluation.forms.analysis import run_choice_label
from evaluation.models import ModelEndpoint
from evaluation.services.judge import judge_config_create

pytestmark = pytest.mark.django_db(transaction=True)


def _options(html: str, name: str) -> dict[str, str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    return dict(re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select))


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
