"""A drafted clue graph: read from the judge's reply, anchored in the context, written in the record format.

No Django inside. The key information a judge quotes is anchored with the project's
anchoring (:func:`annotation.clue_graph.anchor_clues`): a quote found in the context
(exactly, or fuzzily above ``ANCHOR_MIN_SCORE``) is replaced by the context's own span,
so that the draft's key information matches the text (paper Table 7: rewrite key
information that does not match the context); a quote found nowhere is kept and
reported as unanchored. The payload is what a clue-graph screen offers as a draft:
``{"evidence", "multi_hop_reasoning", "anchors", "anchored_share"}``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotation.clue_graph import anchor_clues, render_evidence, render_reasoning
from evaluation.judge.parsing import ParsedReply, ReplyInvalid

MAX_CLUES = 30
MAX_STEPS = 30


@dataclass(frozen=True)
class Draft:
    clues: tuple[tuple[str, str], ...]  # (quote, implication)
    steps: tuple[tuple[tuple[str, ...], str], ...]  # (inputs, output)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ReplyInvalid(f"{what} is not a non-empty string")
    return " ".join(value.split())


def read_draft(reply: ParsedReply) -> Draft:
    """The clues and steps of a clue-graph reply; ReplyInvalid when its shape is not the one asked for."""
    clues_in, steps_in = reply.get(("key_information",)), reply.get(("reasoning",))
    if not isinstance(clues_in, list) or not clues_in:
        raise ReplyInvalid("key_information is not a non-empty list")
    if not isinstance(steps_in, list):
        raise ReplyInvalid("reasoning is not a list")
    if len(clues_in) > MAX_CLUES or len(steps_in) > MAX_STEPS:
        raise ReplyInvalid(f"more than {MAX_CLUES} clues or {MAX_STEPS} steps")
    clues = []
    for i, clue in enumerate(clues_in):
        if not isinstance(clue, dict):
            raise ReplyInvalid(f"key_information[{i}] is not an object")
        clues.append((_text(clue.get("quote"), f"key_information[{i}].quote"),
                      _text(clue.get("implication"), f"key_information[{i}].implication")))
    steps = []
    for i, step in enumerate(steps_in):
        if not isinstance(step, dict) or not isinstance(step.get("inputs"), list) or not step["inputs"]:
            raise ReplyInvalid(f"reasoning[{i}] has no list of inputs")
        inputs = tuple(_text(x, f"reasoning[{i}].inputs") for x in step["inputs"])
        steps.append((inputs, _text(step.get("output"), f"reasoning[{i}].output")))
    return Draft(clues=tuple(clues), steps=tuple(steps))


def anchored_payload(draft: Draft, context: str) -> dict:
    """The draft with its quotes anchored in ``context``, rendered as DetectBench evidence and reasoning."""
    anchors = anchor_clues([quote for quote, _ in draft.clues], context)
    replaced: dict[str, str] = {}
    clues: list[tuple[str, str]] = []
    found = []
    for (quote, implication), anchor in zip(draft.clues, anchors):
        if anchor is None:
            found.append(None)
            clues.append((quote, implication))
            continue
        found.append({"quote": quote, "start": anchor.start, "end": anchor.end, "score": anchor.score,
                      "exact": anchor.exact})
        replaced[quote] = anchor.text
        clues.append((anchor.text, implication))
    steps = [(tuple(replaced.get(x, x) for x in inputs), output) for inputs, output in draft.steps]
    return {
        "evidence": render_evidence(clues, numbering=False),
        "multi_hop_reasoning": render_reasoning(steps) if steps else "",
        "anchors": found,
        "anchored_share": round(sum(a is not None for a in found) / len(found), 4) if found else 0.0,
    }


def draft_from_parts(clues: Sequence[tuple[str, str]], steps: Sequence[tuple[Sequence[str], str]]) -> Draft:
    return Draft(clues=tuple((q, i) for q, i in clues), steps=tuple((tuple(a), o) for a, o in steps))
