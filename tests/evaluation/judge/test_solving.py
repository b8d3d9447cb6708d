"""One judgement per target and belief source, with scripted replies (no server, no database)."""
import asyncio
import json
import math

import pytest

from evaluation.judge.beliefs import TokenLogprob
from evaluation.judge.client import JudgeCompletion, pack_for_cache, unpack
from evaluation.judge.solving import JudgeSolver
from evaluation.judge.specs import JudgeInput
from evaluation.prompting.methods import Completion

CONTEXT = ("Anna found the vase broken at noon. The cat was asleep upstairs all morning. "
           "Ben's muddy shoes stood by the door.")
DATA = JudgeInput("result:7", 3, 2, CONTEXT, "Who broke the vase?", ("Ben", "The cat", "Anna"), 0,
                  evidence="Ben's muddy shoes stood by the door -> Ben was inside", answer="Ben did it.")


def scripted(*texts, logprobs=()):
    calls = []

    async def generate(messages, call_key):
        calls.append((messages, call_key))
        text = texts[min(len(calls) - 1, len(texts) - 1)]
        return JudgeCompletion(text=text, tokens_in=10, tokens_out=5, latency_s=0.01, attempts=1, logprobs=logprobs)

    return generate, calls


def solve(solver, data=DATA, k=1, *texts, logprobs=()):
    generate, calls = scripted(*texts, logprobs=logprobs)
    return asyncio.run(solver.solve(data, (), generate, k=k)), calls


def test_the_prompt_carries_context_question_gold_answer_clue_graph_and_the_answer():
    solver = JudgeSolver(task="free-text", belief_source="verbal")
    prompt = solver.messages(DATA)[0]["content"]
    for part in (CONTEXT, "Who broke the vase?", "### Gold answer:\nBen", "- The cat", "Ben was inside", "Ben did it."):
        assert part in prompt
    assert len(solver.prompt_hash) == 12 and solver.prompt_hash != JudgeSolver(task="screening", belief_source="verbal").prompt_hash


def test_verbal_logprob_and_unscored_replies():
    verbal = JudgeSolver(task="free-text", belief_source="verbal")
    outcome, calls = solve(verbal, DATA, 1, '{"verdict": "correct", "confidence": 0.8, "rationale": "Ben."}')
    assert [(l.aspect, l.label, l.belief, l.status) for l in outcome.labels] == [("verdict", "correct", 0.8, "scored")]
    assert outcome.rationale == "Ben." and outcome.tokens == 15 and len(calls) == 1

    pieces = ['{"verdict": "', "incorrect", '"}']
    tokens = (TokenLogprob(pieces[0], -0.01), TokenLogprob("incorrect", -0.4, (("incorrect", -0.4), ("correct", -1.2))),
              TokenLogprob(pieces[2], -0.01))
    outcome, _ = solve(JudgeSolver(task="free-text", belief_source="logprob"), DATA, 1, "".join(pieces), logprobs=tokens)
    assert outcome.labels[0].label == "incorrect"
    assert outcome.labels[0].belief == pytest.approx(math.exp(-0.4) / (math.exp(-0.4) + math.exp(-1.2)), abs=1e-9)

    truncated = '{"verdict": "corr'
    outcome, _ = solve(verbal, DATA, 1, truncated)
    label = outcome.labels[0]
    assert (label.label, label.belief, label.status) == ("", None, "unscored")
    assert outcome.raw_output == truncated and "truncated" in outcome.rationale


def test_no_answer_to_grade_is_unscored_without_a_request():
    empty = JudgeInput("result:8", 3, 2, CONTEXT, "Who?", ("Ben", "Anna"), 0, answer="  ")
    outcome, calls = solve(JudgeSolver(task="free-text", belief_source="verbal"), empty, 1, "{}")
    assert outcome.labels[0].status == "unscored" and not calls


def test_sampled_majority_share_over_k():
    replies = ['{"verdict": "correct"}', '{"verdict": "incorrect"}', "oops", '{"verdict": "correct"}',
               '{"verdict": "correct"}']
    generate, calls = scripted(*replies)
    outcome = asyncio.run(JudgeSolver(task="free-text", belief_source="sampled").solve(DATA, (), generate, k=5))
    label = outcome.labels[0]
    assert (label.label, label.belief) == ("correct", 0.6)
    assert label.payload == {"votes": {"correct": 3, "incorrect": 1}, "samples": 5}
    assert [key for _, key in calls] == [f"judge-{i}" for i in range(5)]
    assert all(r in outcome.raw_output for r in replies)
    outcome, _ = solve(JudgeSolver(task="free-text", belief_source="sampled"), DATA, 3, "no json")
    assert outcome.labels[0].status == "unscored"


def test_screening_gives_each_aspect_its_own_label_and_belief():
    body = {c: {"verdict": "no", "confidence": 0.9} for c in ("1.1", "1.2", "1.3", "1.4", "1.5")}
    body["keep"] = {"verdict": "keep", "confidence": 0.85}
    outcome, _ = solve(JudgeSolver(task="screening", belief_source="verbal"), DATA, 1, json.dumps(body))
    assert [(l.aspect, l.label, l.belief) for l in outcome.labels] == [
        ("1.1", "no", 0.9), ("1.2", "no", 0.9), ("1.3", "no", 0.9), ("1.4", "no", 0.9), ("1.5", "no", 0.9),
        ("keep", "keep", 0.85)]
    outcome, _ = solve(JudgeSolver(task="screening", belief_source="verbal"), DATA, 1, '{"1.1": {"verdict": "no"}}')
    assert len(outcome.labels) == 6 and {l.status for l in outcome.labels} == {"unscored"}


def test_clue_graph_draft_is_anchored_in_the_context():
    reply = {"key_information": [{"quote": "Ben’s muddy shoes stood by the door", "implication": "Ben came in"},
                                 {"quote": "the cat slept upstairs all morning", "implication": "The cat was away"}],
             "reasoning": [{"inputs": ["Ben came in", "The cat was away"], "output": "Ben broke the vase"}],
             "confidence": 0.7}
    outcome, _ = solve(JudgeSolver(task="clue-graph", belief_source="verbal"), DATA, 1, json.dumps(reply))
    label = outcome.labels[0]
    assert (label.aspect, label.label, label.belief) == ("graph", "draft", 0.7)
    evidence = label.payload["evidence"].splitlines()
    assert evidence[0] == "Ben's muddy shoes stood by the door -> Ben came in"  # the context's own span
    assert CONTEXT[label.payload["anchors"][1]["start"]:label.payload["anchors"][1]["end"]] in evidence[1]
    assert "Ben came in + The cat was away -> Ben broke the vase" in label.payload["multi_hop_reasoning"]
    with pytest.raises(ValueError):
        JudgeSolver(task="clue-graph", belief_source="sampled")
    outcome, _ = solve(JudgeSolver(task="clue-graph", belief_source="verbal"), DATA, 1, '{"key_information": []}')
    assert outcome.labels[0].status == "unscored"


def test_builtin_needs_no_generate():
    outcome = asyncio.run(JudgeSolver(task="free-text", belief_source="builtin").solve(DATA))
    assert outcome.labels[0].label == "correct" and outcome.labels[0].payload["matched_option"] == 0
    outcome = asyncio.run(JudgeSolver(task="clue-graph", belief_source="builtin").solve(DATA))
    assert outcome.labels[0].payload["anchored_share"] == 1.0


def test_cache_envelope_keeps_the_logprobs():
    tokens = (TokenLogprob("{", -0.1, (("{", -0.1), ("[", -2.0))),)
    packed = pack_for_cache(JudgeCompletion(text="{}", logprobs=tokens))
    assert unpack(Completion(text=packed, cached=True)) == ("{}", tokens)
    assert unpack(Completion(text=packed, cached=False))[0] == packed  # only cache entries are opened
    assert pack_for_cache(Completion(text="plain")) == "plain"


def test_a_verdict_without_logprobs_is_unscored_and_keeps_the_verdict():
    outcome, _ = solve(JudgeSolver(task="free-text", belief_source="logprob"), DATA, 1, '{"verdict": "correct"}')
    label = outcome.labels[0]
    assert (label.label, label.belief, label.status) == ("", None, "unscored")
    assert label.payload["verdict_without_belief"] == "correct" and "log-probabilities" in outcome.rationale
