"""evaluation.execution.judge: a judge run's execution. A model judge against the real stand-in server scripted
with verdicts and log-probabilities: stored labels and beliefs equal the script, unreadable replies are unscored
with their raw text, the response cache keeps the log-probabilities, failed requests leave no label and are
retried by a re-run. It goes the model runs' way where they share a concern: the circuit breaker stops a judge
run whose endpoint keeps failing (the run fails with the reason, after a bounded number of requests, not one per
target), and a reply cut at the token cap is named as such, fresh and from the response cache alike. The
built-in judge: unanswered results are unscored, missing labels are resumed, a cancelled run computes nothing."""
import json
import math
import re

import pytest
from django.db.models import Count

from annotation.models import BeliefLabel
from evaluation.execution.judge import judge_run_counts
from evaluation.judge.templates import template_hash
from evaluation.models import CachedResponse, Result, RunStatus
from evaluation.services import judge as services
from tests.support.judge_server import JudgeServer, ScriptedReply, judge_endpoint, verdict_reply

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = re.compile(r"### Answer to grade:\n(?:Answer number )?(\d+)")
ALLOWED = ("correct", "incorrect")


def answer_number(request) -> int:
    return int(ANSWER.search(request["messages"][-1]["content"]).group(1))


def free_text_script(i: int) -> ScriptedReply:
    """The scripted reply to answer number i."""
    kind = i % 6
    a, b = -0.05 - 0.1 * i, -1.0 - 0.07 * i
    if kind == 0:
        return ScriptedReply("verdict: correct (I am fairly sure)")
    if kind == 1:
        return ScriptedReply('{"verdict": "incor')
    if kind == 2:
        return verdict_reply("correct", [("correct", a), ("incorrect", b), ("maybe", -2.5), ("The", -3.0)])
    if kind == 3:
        return verdict_reply("incorrect", [("incorrect", a), ("correct", b), ("c", b - 1.5)])
    if kind == 4:
        return ScriptedReply('{"verdict": "correct", "rationale": "no logprobs from this endpoint"}')
    return verdict_reply("correct", [("correct", -0.7), ("incorrect", -0.7)])


def expected(i: int):
    """(status, label, belief) computed from the script alone: softmax over the allowed verdict tokens."""
    reply = free_text_script(i)
    if reply.logprobs is None:
        return "unscored", "", None
    verdict_token = reply.logprobs[4]
    mass = {}
    for alternative in verdict_token["top_logprobs"]:
        token = alternative["token"]
        verdict = next((v for v in ALLOWED if v.startswith(token) and not any(
            w != v and w.startswith(token) for w in ALLOWED)), None)
        if verdict:
            mass[verdict] = mass.get(verdict, 0) + math.exp(alternative["logprob"])
    chosen = verdict_token["token"]
    return "scored", chosen, mass[chosen] / sum(mass.values())


def labels_by_answer(run, queue):
    numbers = {f"result:{r.pk}": int(r.free_answer.split(":")[0].split()[-1])
               for r in Result.objects.filter(run=run)}
    return {numbers[label.target]: label for label in BeliefLabel.objects.filter(queue=queue)}


def test_logprob_beliefs_equal_the_script_and_unreadable_replies_are_unscored(free_text_run):
    with JudgeServer(script=lambda request: free_text_script(answer_number(request))) as server:
        endpoint = judge_endpoint(server)
        config = services.judge_config_create(name="stand-in-logprob", task="free-text", belief_source="logprob",
                                              endpoint=endpoint)
        judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
        judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
        assert all(r.get("logprobs") is True and r.get("top_logprobs") == 5 for r in server.requests)
        requests = len(server.requests)

        labels = labels_by_answer(free_text_run, config.queue)
        assert len(labels) == judge_run.n == requests
        for i, label in labels.items():
            status, verdict, belief = expected(i)
            assert (label.status, label.label) == (status, verdict), i
            if belief is None:
                assert label.belief is None
            else:
                assert label.belief == pytest.approx(belief, abs=1e-6)
            assert label.raw_output == free_text_script(i).text  # every reply kept as it came
            assert label.belief_source == "logprob" and label.producer == f"judge-run:{judge_run.pk}"
            assert label.prompt_hash == template_hash("free_text_verdict")
        assert labels[4].payload["verdict_without_belief"] == "correct"
        assert "truncated" in labels[1].rationale
        unscored = sum(1 for i in labels if expected(i)[0] == "unscored")
        assert (judge_run.unscored, judge_run.scored, judge_run.errors) == (unscored, len(labels) - unscored, 0)

        # A second configuration asking the same thing is answered from the response cache, log-probabilities included.
        twin = services.judge_config_create(name="stand-in-logprob-twin", task="free-text", belief_source="logprob",
                                            endpoint=endpoint)
        services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=twin, run=free_text_run, enqueue=False))
        assert len(server.requests) == requests
        twins = labels_by_answer(free_text_run, twin.queue)
        assert {i: (l.status, l.label, l.belief) for i, l in twins.items()} == {
            i: (l.status, l.label, l.belief) for i, l in labels.items()}


def test_verbal_screening_every_aspect_as_scripted(sample_items):
    criteria = ("1.1", "1.2", "1.3", "1.4", "1.5")

    def script(request):
        content = request["messages"][-1]["content"]
        n = sum(map(ord, content)) % 7
        body = {c: {"verdict": "yes" if (n + j) % 4 == 0 else "no", "confidence": round(0.5 + 0.05 * ((n + j) % 9), 2)}
                for j, c in enumerate(criteria)}
        flagged = any(v["verdict"] == "yes" for v in body.values())
        body["keep"] = {"verdict": "delete" if flagged else "keep", "confidence": 0.8}
        body["rationale"] = f"n={n}"
        return ScriptedReply(json.dumps(body))

    with JudgeServer(script=script) as server:
        config = services.judge_config_create(name="stand-in-screening", task="screening", belief_source="verbal",
                                              endpoint=judge_endpoint(server), accept_threshold=0.9, blind=True)
        judge_run = services.judge_run_launch(config=config, split="test", limit=6, enqueue=False)
        judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert config.queue.blind and config.queue.accept_threshold == 0.9
    assert (judge_run.n, judge_run.scored) == (6, 6)
    for item in sample_items[:6]:
        prompt = next(p for p in prompts if item.context in p)
        body = json.loads(script({"messages": [{"content": prompt}]}).text)
        for aspect in (*criteria, "keep"):
            label = BeliefLabel.objects.get(queue=config.queue, target=f"item:{item.pk}", aspect=aspect)
            assert (label.label, label.belief) == (body[aspect]["verdict"], body[aspect]["confidence"])
            assert label.rationale == body["rationale"]


def test_sampled_belief_is_the_majority_share(free_text_run):
    seen: dict[str, int] = {}

    def script(request):
        content = request["messages"][-1]["content"]
        seen[content] = seen.get(content, 0) + 1
        verdict = ["correct", "incorrect", "correct", "correct"][seen[content] - 1]
        return ScriptedReply(f'{{"verdict": "{verdict}"}}')

    with JudgeServer(script=script) as server:
        config = services.judge_config_create(name="stand-in-sampled", task="free-text", belief_source="sampled",
                                              samples=4, temperature=1.0, endpoint=judge_endpoint(server, seed=7))
        judge_run = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, limit=5, enqueue=False))
        assert len(server.requests) == 5 * 4
        assert all("seed" not in r and r["temperature"] == 1.0 for r in server.requests)
    labels = BeliefLabel.objects.filter(queue=config.queue)
    assert judge_run.scored == 5 and {(l.label, l.belief) for l in labels} == {("correct", 0.75)}
    assert labels[0].payload == {"votes": {"correct": 3, "incorrect": 1}, "samples": 4,
                                 "answer": labels[0].payload["answer"]}
    assert labels[0].payload["answer"]  # the graded answer, for the reviewer


def test_failed_requests_leave_no_label_and_a_rerun_fills_them(free_text_run):
    with JudgeServer(script=lambda request: verdict_reply("correct", [("correct", -0.1), ("incorrect", -2.4)]),
                     rate_500=0.5, seed=3) as server:
        endpoint = judge_endpoint(server, max_attempts=1, use_cache=False)
        config = services.judge_config_create(name="stand-in-flaky", task="free-text", belief_source="logprob",
                                              endpoint=endpoint)
        first = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, enqueue=False))
        assert 0 < first.errors < first.n and first.scored == first.n - first.errors
        assert "HTTP 500" in first.last_error
        assert BeliefLabel.objects.filter(queue=config.queue).count() == first.n - first.errors
        server.configure(rate_500=0.0)
        before = len(server.requests)
        second = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, enqueue=False))
        assert len(server.requests) - before == first.errors  # only what was missing
    assert (second.errors, second.scored) == (0, second.n)
    assert BeliefLabel.objects.filter(queue=config.queue).count() == second.n
    beliefs = list(BeliefLabel.objects.filter(queue=config.queue).values_list("belief", flat=True))
    assert beliefs == pytest.approx([math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4))] * len(beliefs), abs=1e-9)


# The model runs' circuit breaker and token cap.

def test_the_circuit_breaker_fails_a_judge_run_whose_endpoint_refuses_every_request(free_text_run, settings):
    settings.EVALUATION_BREAKER_THRESHOLD = 3
    with JudgeServer(script=lambda request: ScriptedReply('{"verdict": "correct"}'), echo_auth_status=401) as server:
        endpoint = judge_endpoint(server, max_concurrency=2, max_attempts=1, use_cache=False)
        config = services.judge_config_create(name="stand-in-401", task="free-text", belief_source="verbal",
                                              endpoint=endpoint)
        judge_run = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, enqueue=False))
        sent = server.stats.by_status.get("401", 0)
    assert judge_run.n >= 10  # enough targets that "one request each" would be far above the bound
    assert judge_run.status == RunStatus.FAILED, judge_run.status
    assert "kept failing" in judge_run.last_error and "401" in judge_run.last_error
    assert 3 <= sent <= 3 + 2, sent  # the threshold, plus what was already in flight at the endpoint's concurrency
    assert not BeliefLabel.objects.filter(queue=config.queue).exists()


def test_a_reply_cut_at_the_token_cap_is_named_fresh_and_from_the_cache(free_text_run):
    cut = ScriptedReply('{"verdict": "corr', finish_reason="length")
    with JudgeServer(script=lambda request: cut) as server:
        endpoint = judge_endpoint(server)
        config = services.judge_config_create(name="stand-in-cut", task="free-text", belief_source="verbal",
                                              endpoint=endpoint)
        first = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, limit=3, enqueue=False))
        requests = len(server.requests)
        assert set(CachedResponse.objects.values_list("finish_reason", flat=True)) == {"length"}
        twin = services.judge_config_create(name="stand-in-cut-twin", task="free-text", belief_source="verbal",
                                            endpoint=endpoint)
        services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=twin, run=free_text_run, limit=3, enqueue=False))
        assert len(server.requests) == requests  # the twin was answered from the cache
    assert first.unscored == 3
    for queue in (config.queue, twin.queue):
        rationales = set(BeliefLabel.objects.filter(queue=queue).values_list("rationale", flat=True))
        assert len(rationales) == 1 and "cut at the judge's token cap" in rationales.pop()


# The built-in judge: unscored, resumed, cancelled.

def assert_one_label_per_target_and_aspect(queue):
    assert not BeliefLabel.objects.filter(queue=queue).values("target", "aspect", "item_version").annotate(
        c=Count("pk")).filter(c__gt=1).exists()



def test_unanswered_results_are_unscored_and_missing_labels_are_resumed(free_text_run):
    first = Result.objects.filter(run=free_text_run).order_by("pk").first()
    Result.objects.filter(pk=first.pk).update(free_answer="")
    config = services.judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
    services.judge_run_execute_in_process(judge_run=judge_run)
    label = BeliefLabel.objects.get(target=f"result:{first.pk}")
    assert (label.status, label.label, label.belief) == ("unscored", "", None)
    judge_run.refresh_from_db()
    assert judge_run.unscored == 1 and judge_run.scored == judge_run.n - 1

    # Delete half of the labels (as if the run had been killed before writing them) and resume.
    gone = list(BeliefLabel.objects.filter(queue=config.queue).order_by("pk").values_list("pk", flat=True)[::2])
    BeliefLabel.objects.filter(pk__in=gone).delete()
    assert judge_run_counts(judge_run)["errors"] == len(gone)
    first_wall = judge_run.wall_s
    assert first_wall > 0
    services.judge_run_resume(judge_run=judge_run, enqueue=False)
    judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
    assert (judge_run.status, judge_run.errors, judge_run.scored + judge_run.unscored) == (
        RunStatus.FINISHED, 0, judge_run.n)
    assert judge_run.wall_s > first_wall  # the resume's execution adds to the first one's time, not replaces it
    assert_one_label_per_target_and_aspect(config.queue)



def test_a_cancelled_judge_run_computes_nothing(free_text_run):
    config = services.judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
    services.judge_run_cancel(judge_run=judge_run)
    judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
    assert judge_run.status == RunStatus.CANCELLED and not BeliefLabel.objects.exists()



def test_after_a_revert_the_judge_figures_take_the_labels_of_the_content_now(researcher):
    """Labels at version 1 (keep), the item edited and judged again at version 2 (delete), then reverted to version
    1: the judge run's counts, the trust page's judge share and the quality card take the version 1 labels, which
    judged the content the item has, though the others are newer."""
    from annotation.models import ItemStatus
    from annotation.selectors.belief_trust import powered_share
    from annotation.services import item_revert, item_update
    from annotation.services.belief import belief_labels_record
    from evaluation.execution.judge import judge_run_counts, missing_inputs
    from evaluation.models import JudgeRun
    from evaluation.selectors.judge_quality import judge_quality_card
    from evaluation.services import judge as judge_services
    from tests.annotation.belief_support import DELETE_FOR_MATH, screening_rows
    from tests.annotation.workflow_support import make_items

    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source="rv")
    config = judge_services.judge_config_builtin()
    keep = {"keep": ("keep", 0.81), **{aspect: ("no", 0.9) for aspect in ("1.1", "1.2", "1.3", "1.4", "1.5")}}
    belief_labels_record(queue=config.queue, rows=screening_rows(item, keep, version=1))
    edited = item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Really?"})
    belief_labels_record(queue=config.queue, rows=screening_rows(item, DELETE_FOR_MATH, version=2))
    item_revert(item_id=item.pk, revision_number=1, base_version=edited.version)
    judge_run = JudgeRun.objects.create(config=config, task="screening", split="test", targets=[f"item:{item.pk}"],
                                        n=1)
    assert missing_inputs(judge_run) == []  # nothing to judge again: the content now was judged
    assert judge_run_counts(judge_run)["label_counts"] == {"keep:keep": 1, **{f"{a}:no": 1 for a in
                                                                              ("1.1", "1.2", "1.3", "1.4", "1.5")}}
    assert powered_share(queue=config.queue, task="screening")["judge"]["value"] == 1.0
    keep_spread = judge_quality_card(config=config)["spread"]["by_aspect"][-1]
    assert keep_spread["aspect"] == "keep" and keep_spread["n"] == 1 and keep_spread["mean"] == 0.81
