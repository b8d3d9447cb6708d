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


def _belief_at_verdict(top, chosen_piece="correct", choices=("correct", "incorrect")):
    pieces = ['{"verdict": "', chosen_piece, '"}']
    tokens = tokens_for(pieces, {1: top})
    text = "".join(pieces)
    verdict = read_verdicts(text, TASKS["free-text"].aspects).verdicts[0]
    return logprob_belief(tokens, text, verdict.span, verdict.label, choices)


def test_a_rival_verdict_outside_the_top_logprobs_is_bounded_by_them_never_a_belief_of_one():
    """Issue 21: 203 of 1,035 labels were stored at exactly 1.0 because the rival verdict was not among the
    returned top log-probabilities. Its probability is at most the smallest one returned and at most the mass
    the list leaves over; the belief is the chosen verdict's share with the rival at that bound."""
    # The list leaves 1 - (0.90 + 0.06 + 0.03) = 0.01 over; the smallest listed is 0.03: the rival is <= 0.01.
    top = [("correct", math.log(0.90)), ("{", math.log(0.06)), ("The", math.log(0.03))]
    belief = _belief_at_verdict(top)
    assert belief < 1.0
    assert belief == pytest.approx(0.90 / (0.90 + 0.01), abs=1e-12)
    # Here the smallest listed probability is the tighter bound (leftover 0.2; smallest 0.001).
    top = [("correct", math.log(0.799)), ("x", math.log(0.001))]
    assert _belief_at_verdict(top) == pytest.approx(0.799 / (0.799 + 0.001), abs=1e-12)
    # One token only (no alternatives asked for): the rival is at most min(p, 1 - p).
    assert _belief_at_verdict([("correct", math.log(0.995))]) == pytest.approx(0.995 / (0.995 + 0.005), abs=1e-12)
    # A confident list that rounds to a full mass still leaves the rival its smallest-listed bound.
    top = [("correct", math.log(0.9999)), ("x", math.log(0.0001)), ("y", math.log(0.00001))]
    belief = _belief_at_verdict(top)
    assert belief < 1.0 and belief == pytest.approx(0.9999 / (0.9999 + 0.00001), abs=1e-12)
    # Where both verdicts are listed, the belief is their softmax, as before.
    top = [("correct", math.log(0.7)), ("incorrect", math.log(0.2))]
    assert _belief_at_verdict(top) == pytest.approx(0.7 / 0.9, abs=1e-12)


def test_with_three_verdicts_the_absent_ones_share_the_leftover():
    choices = ("yes", "no", "unsure")
    pieces = ['{"verdict": "', "yes", '"}']
    top = [("yes", math.log(0.80)), ("no", math.log(0.15)), ("{", math.log(0.04))]  # leftover 0.01
    tokens = tokens_for(pieces, {1: top})
    text = "".join(pieces)
    belief = logprob_belief(tokens, text, (12, 17), "yes", choices)
    assert belief == pytest.approx(0.80 / (0.80 + 0.15 + 0.01), abs=1e-12)


def test_log_probabilities_keep_no_text_postgresql_refuses_and_no_number_that_is_not_one():
    """Token text goes to the response cache: a NUL or a lone surrogate becomes U+FFFD; NaN or +inf ends the list
    (as any other malformed entry does), -inf is a probability of 0."""
    content = [{"token": "Y\x00es", "logprob": -0.1, "top_logprobs": [{"token": "\ud800", "logprob": -2.0},
                                                                       {"token": "No", "logprob": float("nan")}]},
               {"token": "x", "logprob": float("-inf")},
               {"token": "y", "logprob": float("nan")}, {"token": "z", "logprob": -1.0}]
    tokens = read_logprobs(content)
    assert [t.token for t in tokens] == ["Y\ufffdes", "x"]
    assert tokens[0].top == (("\ufffd", -2.0),)
