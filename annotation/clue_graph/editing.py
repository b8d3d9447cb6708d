"""The clue graph as editable rows, and back to the official DetectBench texts (pure Python).

The clue-graph screen edits clues (``text -> implication``) and reasoning steps
(``A + B -> C``). Saving writes ``evidence`` and ``multi_hop_reasoning`` in the
official format with render.render_evidence / render_reasoning. Parts the
screen does not edit are kept as they were: the evidence header and the
combined steps that follow it, the step headers, the numbering style of the
clues and of the steps (``1. ``, ``(1) ``, ``- ``; rows are renumbered after
edits), and lines that do not parse (free-text conclusions), which are appended
unchanged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from .data import DEFAULT_EVIDENCE_HEADER, DEFAULT_REASONING_HEADER, Clue, ClueGraph, Step
from .parse import parse_clue_graph
from .render import render_evidence, render_reasoning


@dataclass
class EditableStep:
    inputs: list[str]
    output: str
    header: str | None = None


@dataclass
class EditableGraph:
    clues: list[tuple[str, str]]
    steps: list[EditableStep]
    evidence_header: str | None = None
    reasoning_header: str | None = DEFAULT_REASONING_HEADER
    evidence_steps: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    evidence_notes: list[str] = field(default_factory=list)
    reasoning_notes: list[str] = field(default_factory=list)
    #: Numbering written before each clue / step, "{n}" standing for its number ("{n}. "); "" for none.
    clue_prefix: str = ""
    step_prefix: str = ""

    def to_data(self) -> dict:
        return {
            "clues": [list(c) for c in self.clues],
            "steps": [{"inputs": list(s.inputs), "output": s.output, "header": s.header} for s in self.steps],
            "evidence_header": self.evidence_header,
            "reasoning_header": self.reasoning_header,
            "evidence_steps": [[list(i), o] for i, o in self.evidence_steps],
            "evidence_notes": self.evidence_notes,
            "reasoning_notes": self.reasoning_notes,
            "clue_prefix": self.clue_prefix,
            "step_prefix": self.step_prefix,
        }

    @classmethod
    def from_data(cls, data: dict) -> "EditableGraph":
        return cls(
            clues=[(str(t), str(i)) for t, i in data.get("clues", [])],
            steps=[EditableStep([str(x) for x in s.get("inputs", [])], str(s.get("output", "")), s.get("header"))
                   for s in data.get("steps", [])],
            evidence_header=data.get("evidence_header"),
            reasoning_header=data.get("reasoning_header"),
            evidence_steps=[(tuple(i), o) for i, o in data.get("evidence_steps", [])],
            evidence_notes=list(data.get("evidence_notes", [])),
            reasoning_notes=list(data.get("reasoning_notes", [])),
            clue_prefix=str(data.get("clue_prefix") or ""),
            step_prefix=str(data.get("step_prefix") or ""),
        )

    def with_clue_text(self, index: int, text: str) -> "EditableGraph":
        """A copy in which clue `index` reads `text` (steps that quoted the old text follow it)."""
        old = self.clues[index][0]
        clues = list(self.clues)
        clues[index] = (text, clues[index][1])
        steps = [replace(s, inputs=[text if given == old else given for given in s.inputs]) for s in self.steps]
        return replace(self, clues=clues, steps=steps)

    def parsed(self) -> ClueGraph:
        evidence, reasoning = self.texts()
        return parse_clue_graph(evidence, reasoning)

    def texts(self) -> tuple[str, str]:
        """(evidence, multi_hop_reasoning) in the official format."""
        clues = [
            Clue(index=n - 1, text=t.strip(), implication=i.strip(), line_no=0,
                            prefix=_numbered(self.clue_prefix, n))
            for n, (t, i) in enumerate(((t, i) for t, i in self.clues if t.strip() or i.strip()), 1)
        ]
        evidence = render_evidence(
            clues, self.evidence_header or DEFAULT_EVIDENCE_HEADER, self.evidence_steps)
        reasoning_steps, number = [], 0
        for s in self.steps:
            if not (s.output.strip() or any(x.strip() for x in s.inputs)):
                continue
            number = 1 if s.header else number + 1  # numbering starts again under each header
            reasoning_steps.append(Step(
                inputs=tuple(x.strip() for x in s.inputs if x.strip()), output=s.output.strip(), line_no=0,
                header=s.header, prefix=_numbered(self.step_prefix, number)))
        reasoning = render_reasoning(reasoning_steps, self.reasoning_header)
        if self.evidence_notes:
            evidence = "\n".join([evidence, *self.evidence_notes]).strip("\n")
        if self.reasoning_notes:
            reasoning = "\n".join([reasoning, *self.reasoning_notes]).strip("\n")
        return evidence, reasoning


def _numbered(template: str, number: int) -> str:
    return template.replace("{n}", str(number))


def _prefix_template(prefixes) -> str:
    """The numbering style of the first numbered row ("2. " -> "{n}. "), or "" when no row is numbered."""
    first = next((p for p in prefixes if p), "")
    return re.sub(r"\d+", "{n}", first)


def editable_graph(evidence: str, reasoning: str) -> EditableGraph:
    """The rows of an item's clue graph as stored."""
    graph = parse_clue_graph(evidence, reasoning)
    return EditableGraph(
        clues=[(c.text, c.implication) for c in graph.clues],
        steps=[EditableStep(list(s.inputs), s.output, s.header) for s in graph.steps],
        evidence_header=graph.evidence_header,
        reasoning_header=graph.reasoning_header,
        evidence_steps=[(s.inputs, s.output) for s in graph.evidence_steps],
        evidence_notes=[text for section, _, text in graph.unparsed_lines if section == "evidence"],
        reasoning_notes=[text for section, _, text in graph.unparsed_lines if section == "reasoning"],
        clue_prefix=_prefix_template(c.prefix for c in graph.clues),
        step_prefix=_prefix_template(s.prefix for s in graph.steps),
    )
