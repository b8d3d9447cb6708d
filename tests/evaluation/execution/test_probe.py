"""evaluation.execution.probe with evaluation.execution.judge: a position probe is a judge run executed by the
judge runs' own path (engine, client, limiter, breaker, cache; resume), whose labels go to JudgeProbeLabel, never
to the review queue. A judge whose verdict depends on where the options stand flips; a position-invariant one
does not."""
import re

import pytest

from annotation.models import BeliefLabel, Item
from evaluation.judge import probe as probes
from evaluation.models import CachedResponse, JudgeProbeLabel
from evaluation.selectors.judge_quality import judge_quality_card, probe_pairs
from evaluation.services import judge as services
from tests.support.judge_server import JudgeServer, judge_endpoint, verdict_reply

pytestmark = pytest.mark.django_db(transaction=True)

WRONG = re.compile(r"### Wrong options:\n- ([^\n]*)\n")
ANSWER = re.compile(r"### Answer to grade:\nAnswer number (\d+)")


def judged(config, run):
    judge_run = services.judge_run_launch(config=config, run=run, enqueue=False)
    return services.judge_run_execute_in_process(judge_run=judge_run)


def probed(judge_run, kind=probes.REVERSED, sample=1000):
    probe = services.judge_probe_launch(judge_run=judge_run, kind=kind, sample=sample, enqueue=False)
    return services.judge_run_execute_in_process(judge_run=probe)


def position(config, kind=probes.REVERSED) -> dict:
    return next(p for p in judge_quality_card(config=config)["position"] if p["kind"] == kind)


def test_the_builtin_judge_on_distinct_options_is_position_invariant(free_text_run):
    config = services.judge_config_builtin()
    judge_run = judged(config, free_text_run)
    in_queue = BeliefLabel.objects.filter(queue=config.queue).count()
    probe = probed(judge_run)
    assert (probe.status, probe.n, probe.errors) == ("finished", judge_run.n, 0)
    assert probe.scored + probe.unscored == probe.n
    # Its labels are the probe's own: none went to the review queue.
    assert BeliefLabel.objects.filter(queue=config.queue).count() == in_queue
    labels = list(JudgeProbeLabel.objects.filter(judge_run=probe))
    assert len(labels) == probe.n
    for label in labels:
        options = Item.objects.get(pk=label.item_id).options
        assert label.option_order == list(probes.option_order(probes.REVERSED, len(options)))
    found = position(config)
    assert found["n"] == probe.scored > 0
    assert (found["flips"], found["rate"], found["low"]) == (0, 0.0, 0.0)
    assert found["mean_abs_change"] == pytest.approx(0.0, abs=1e-9)
    assert [r["pk"] for r in found["runs"]] == [probe.pk] and found["pooled_over"] == 1
    # Executed again (a resume), it computes nothing new: one probe label per target and aspect.
    services.judge_run_execute_in_process(judge_run=services.judge_run_resume(judge_run=probe, enqueue=False))
    assert JudgeProbeLabel.objects.filter(judge_run=probe).count() == probe.n


def test_the_builtin_judge_breaks_ties_by_position_and_the_probe_sees_it(free_text_run):
    # The gold option's text repeated in the next option (as in 9 of the test items): the built-in judge picks
    # the first of two equally similar options, so the verdict on an answer quoting it depends on their order.
    for item in Item.objects.filter(pk__in=free_text_run.item_ids):
        options = list(item.options)
        options[(item.answer_index + 1) % len(options)] = options[item.answer_index]
        Item.objects.filter(pk=item.pk).update(options=options)
    config = services.judge_config_builtin()
    judge_run = judged(config, free_text_run)
    probed(judge_run)
    found = position(config)
    pairs = [p for p in probe_pairs(config, probes.REVERSED) if p["scored"]]
    flips = sum(p["original_label"] != p["permuted_label"] for p in pairs)
    assert found["n"] == len(pairs) > 0 and found["flips"] == flips > 0
    assert found["rate"] == pytest.approx(flips / len(pairs)) and found["low"] > 0
    # A tie is a coin for the built-in judge (belief 0.5 either way): the label flips, its probability of
    # "correct" does not move.
    assert all(p["original_belief"] == p["permuted_belief"] == 0.5 for p in pairs
               if p["original_label"] != p["permuted_label"])
    assert found["n_belief"] == len(pairs) and found["mean_abs_change"] is not None


def position_biased(request):
    """A model judge that reads the first wrong option listed, not the answer: correct when its text has an
    even length."""
    first = WRONG.search(request["messages"][-1]["content"]).group(1)
    verdict = "correct" if len(first) % 2 == 0 else "incorrect"
    other = "incorrect" if verdict == "correct" else "correct"
    return verdict_reply(verdict, [(verdict, -0.2), (other, -1.8)])


def position_blind(request):
    """A model judge that reads only the answer: correct for even answer numbers."""
    number = int(ANSWER.search(request["messages"][-1]["content"]).group(1))
    verdict = "correct" if number % 2 == 0 else "incorrect"
    other = "incorrect" if verdict == "correct" else "correct"
    return verdict_reply(verdict, [(verdict, -0.1 - 0.01 * number), (other, -2.0)])


@pytest.mark.parametrize(("script", "flips"), [(position_biased, True), (position_blind, False)])
def test_a_model_judges_probe_goes_through_the_endpoint_and_its_cache(free_text_run, script, flips):
    with JudgeServer(script=script) as server:
        config = services.judge_config_create(name=f"stand-in-{script.__name__.replace('_', '-')}",
                                              task="free-text", belief_source="logprob",
                                              endpoint=judge_endpoint(server))
        judge_run = judged(config, free_text_run)
        asked = len(server.requests)
        assert asked == judge_run.n
        probe = probed(judge_run)
        # One request per probed target, with the judge's own parameters, the options permuted in its prompt.
        assert len(server.requests) == asked + probe.n
        assert all(r.get("logprobs") is True for r in server.requests[asked:])
        first = server.requests[0]["messages"][-1]["content"]
        assert first not in {r["messages"][-1]["content"] for r in server.requests[asked:]}
        cached = CachedResponse.objects.count()
        # A second probe of the same targets and permutation is answered from the response cache.
        probed(judge_run)
        assert len(server.requests) == asked + probe.n and CachedResponse.objects.count() == cached
    found = position(config)
    assert found["n"] == probe.scored == probe.n
    if flips:
        assert found["flips"] > 0 and found["rate"] > 0
    else:
        assert found["flips"] == 0 and found["rate"] == 0 and found["mean_abs_change"] == pytest.approx(0, abs=1e-9)


def test_a_screening_probe_is_read_per_question(sample_items, researcher):
    from django.urls import reverse

    from tests.annotation.workflow_support import client_for

    config = services.judge_config_builtin()
    judge_run = services.judge_run_execute_in_process(judge_run=services.judge_run_launch(
        config=config, task="screening", split="test", limit=6, enqueue=False))
    probe = probed(judge_run, kind=probes.ROTATED)
    assert JudgeProbeLabel.objects.filter(judge_run=probe).count() == 6 * 6  # six questions per item
    found = position(config, probes.ROTATED)
    assert found["pooled_over"] == 6 and found["n"] == 36
    assert [(a["aspect"], a["n"]) for a in found["by_aspect"]] == [(a, 6) for a in ("1.1", "1.2", "1.3", "1.4", "1.5",
                                                                                    "keep")]
    # The screening heuristics read the context, the question and the gold option's text: no flip.
    assert found["flips"] == 0 and all(a["flips"] == 0 for a in found["by_aspect"])
    page = client_for(researcher).get(reverse("evaluation:judge_quality", args=[config.name])).content.decode()
    assert "pooled over 6 questions" in page
