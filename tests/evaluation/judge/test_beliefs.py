"""Beliefs from log-probabilities (normalised over the allowed verdicts), from samples, and as a sequence."""
import math

import pytest

from evaluation.judge.beliefs import (
    TokenLogprob,
    logprob_belief,
    logprobs_as_json,
    read_logprobs,
    sampled_belief,
    sequence_belief,
    verdict_of_token,
)
from evaluation.judge.parsing import read_verdicts
from evaluation.judge.specs import TASKS


def tokens_for(pieces, alternatives_at=None):
    """Token log-probabilities spelling ''.join(pieces); alternatives_at = {index: [(token, logprob), ...]}."""
    alternatives_at = alternatives_at or {}
    return tuple(TokenLogprob(p, alternatives_at.get(i, [(p, -0.01)])[0][1], tuple(alternatives_at.get(i, [(p, -0.01)])))
                 for i, p in enumerate(pieces))


def test_belief_is_the_softmax_of_the_allowed_verdicts_at_the_verdict_token():
    pieces = ['{"', "verdict", '":', ' "', "correct", '",', ' "', "confidence", '":', " 0.9", "}"]
    top = [("correct", -0.2), ("incorrect", -1.9), ("unsure", -3.0), ("in", -4.0)]
    tokens = tokens_for(pieces, {4: top})
    text = "".join(pieces)
    verdict = read_verdicts(text, TASKS["free-text"].aspects).verdicts[0]
    belief = logprob_belief(tokens, text, verdict.span, verdict.label, ("correct", "incorrect"))
    expected = math.exp(-0.2) / (math.exp(-0.2) + math.exp(-1.9) + math.exp(-4.0))
    assert belief == pytest.approx(expected, abs=1e-12)


def test_a_token_that_starts_before_the_verdict_is_read_after_the_same_lead():
    pieces = ['{"verdict":', ' "inc', 'orrect"}']
    tokens = tokens_for(pieces, {1: [(' "inc', -0.5), (' "correct', -1.5), (' "c', -3.0), (" {", -2.0)]})
    text = "".join(pieces)
    verdict = read_verdicts(text, TASKS["free-text"].aspects).verdicts[0]
    assert verdict.label == "incorrect"
    belief = logprob_belief(tokens, text, verdict.span, "incorrect", ("correct", "incorrect"))
    assert belief == pytest.approx(math.exp(-0.5) / (math.exp(-0.5) + math.exp(-1.5) + math.exp(-3.0)), abs=1e-12)


def test_no_belief_without_logprobs_or_when_they_do_not_spell_the_reply():
    text = '{"verdict": "correct"}'
    span = (12, 21)
    assert logprob_belief((), text, span, "correct", ("correct", "incorrect")) is None
    assert logprob_belief(tokens_for(['{"verdict": "corr', "ect!"]), text, span, "correct", ("correct", "incorrect")) is None


def test_verdict_of_token():
    choices = ("correct", "incorrect")
    assert verdict_of_token(' "Inc', choices) == "incorrect"
    assert verdict_of_token("c", choices) == "correct"
    assert verdict_of_token('correct",', choices) == "correct"
    assert verdict_of_token(' "', choices) is None
    assert verdict_of_token("x", choices) is None
    assert verdict_of_token("e", ("yes", "yet")) is None  # matches neither
    assert verdict_of_token("ye", ("yes", "yet")) is None  # ambiguous


def test_sampled_belief_is_the_majority_share_of_all_samples():
    assert sampled_belief(["a", "b", "b", None, "a"]) == ("a", 0.4)  # tie: the earliest
    assert sampled_belief(["no", "no", "no", "yes"]) == ("no", 0.75)
    assert sampled_belief([None, None]) == (None, None)


def test_sequence_belief_and_the_logprob_round_trip():
    tokens = tokens_for(["a", "b"], {0: [("a", -0.1), ("x", -3)], 1: [("b", -0.3)]})
    assert sequence_belief(tokens) == pytest.approx(math.exp(-0.2))
    assert sequence_belief(()) is None
    assert read_logprobs(logprobs_as_json(tokens)) == tokens
    assert read_logprobs(None) == ()
    assert read_logprobs([{"token": "a", "logprob": "bad"}]) == ()
