"""The strict JSON reader of judge replies: one object, positions of its values, refusals with a reason."""
import json

import pytest

from evaluation.judge.parsing import AspectSpec, ReplyInvalid, parse_reply, read_verdicts
from evaluation.judge.specs import TASKS

FREE = TASKS["free-text"].aspects
SCREEN = TASKS["screening"].aspects


def test_values_and_their_spans_point_into_the_raw_text():
    text = ' {"verdict": "correct", "confidence": 0.75, "rationale": "Same \\"person\\".", "n": [1, {"a": null}]}\n'
    reply = parse_reply(text)
    assert reply.value == json.loads(text)
    for path, expected in [(("verdict",), '"correct"'), (("confidence",), "0.75"), (("n", 1, "a"), "null"),
                           (("n", 0), "1")]:
        start, end = reply.spans[path]
        assert text[start:end] == expected
    assert reply.get(("n", 1, "a"), "missing") is None
    assert reply.get(("n", 5), "missing") == "missing"


def test_a_single_code_fence_is_accepted_with_offsets_into_the_original():
    text = 'noise? no:\n```json\n{"verdict": "incorrect"}\n```'
    with pytest.raises(ReplyInvalid):
        parse_reply(text)
    fenced = '```json\n{"verdict": "incorrect"}\n```\n'
    reply = parse_reply(fenced)
    start, end = reply.spans[("verdict",)]
    assert fenced[start:end] == '"incorrect"'


@pytest.mark.parametrize("text", [
    "", "   ", "correct", '{"verdict": "correct"', '{"verdict": "corr', '{"verdict": "correct",}',
    "{'verdict': 'correct'}", '{"verdict": "correct"} {"verdict": "incorrect"}', '{"verdict": "correct"} thanks',
    'The verdict: {"verdict": "correct"}', '{"verdict": "correct", "verdict": "incorrect"}', '{"a": NaN}',
    '{"a": 01}', '[{"verdict": "correct"}]', '{"a": tru}', '{"a" 1}', '{"a": [1 2]}',
])
def test_anything_but_one_strict_object_is_refused(text):
    with pytest.raises(ReplyInvalid):
        parse_reply(text)


def test_verdicts_must_be_allowed_and_confidence_in_range():
    assert read_verdicts('{"verdict": " Correct "}', FREE).verdicts[0].label == "correct"
    for bad in ['{"verdict": "maybe"}', '{"verdict": 1}', '{"rationale": "x"}',
                '{"verdict": "correct", "confidence": 1.5}', '{"verdict": "correct", "confidence": true}',
                '{"verdict": "correct", "confidence": "0.9"}']:
        with pytest.raises(ReplyInvalid):
            read_verdicts(bad, FREE)
    with pytest.raises(ReplyInvalid, match="no confidence"):
        read_verdicts('{"verdict": "correct"}', FREE, confidence_required=True)
    read = read_verdicts('{"verdict": "incorrect", "confidence": 0, "rationale": "No."}', FREE, confidence_required=True)
    assert (read.verdicts[0].label, read.verdicts[0].confidence, read.rationale) == ("incorrect", 0.0, "No.")


def test_screening_reads_every_criterion_and_keep():
    body = {c: {"verdict": "no", "confidence": 0.9} for c in ("1.1", "1.2", "1.3", "1.4", "1.5")}
    body["1.2"] = {"verdict": "yes", "confidence": 0.6}
    body["keep"] = {"verdict": "delete", "confidence": 0.7}
    text = json.dumps(body)
    read = read_verdicts(text, SCREEN, confidence_required=True)
    assert [(v.aspect, v.label, v.confidence) for v in read.verdicts] == [
        ("1.1", "no", 0.9), ("1.2", "yes", 0.6), ("1.3", "no", 0.9), ("1.4", "no", 0.9), ("1.5", "no", 0.9),
        ("keep", "delete", 0.7)]
    assert all(text[v.span[0]:v.span[1]] == f'"{v.label}"' for v in read.verdicts)
    del body["1.4"]
    with pytest.raises(ReplyInvalid, match="1.4"):
        read_verdicts(json.dumps(body), SCREEN)


def test_aspect_spec_paths_are_followed():
    spec = AspectSpec("x", ("a", "b"), ("outer", "inner"), ("outer", "p"))
    assert read_verdicts('{"outer": {"inner": "b", "p": 0.5}}', [spec]).verdicts[0].confidence == 0.5
