"""Check a clue graph against its context: every issue is one of the declared IssueKind values."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from ..text import node_key
from .anchor import ANCHOR_MIN_SCORE, anchor_clues
from .data import Clue, ClueGraph, Step
from .nodes import same_node


class IssueKind(enum.StrEnum):
    """Every kind of issue the clue-graph checks report."""

    UNANCHORED_CLUE = "unanchored_clue"
    FUZZY_CLUE = "fuzzy_clue"
    DANGLING_REFERENCE = "dangling_reference"
    REPEATED_STEP = "repeated_step"
    REDUNDANT_STEP = "redundant_step"
    UNUSED_CLUE = "unused_clue"
    NO_CONCLUSION = "no_conclusion"
    UNPARSED_LINE = "unparsed_line"
    NO_ANSWER = "no_answer"


#: The kinds as plain strings, in declaration order.
ISSUE_KINDS = tuple(kind.value for kind in IssueKind)


@dataclass(frozen=True)
class Issue:
    """A problem found by :func:`check_graph` (``kind`` is an IssueKind)."""

    kind: IssueKind
    message: str
    line_no: int | None = None
    clue_index: int | None = None
    section: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", IssueKind(self.kind))


class _Nodes:
    """Known node texts of a graph, compared after normalisation with a fuzzy threshold."""

    def __init__(self) -> None:
        self.exact: set[str] = set()
        self.texts: list[str] = []

    def add(self, text: str) -> None:
        key = node_key(text)
        if key and key not in self.exact:
            self.exact.add(key)
            self.texts.append(text)

    def __contains__(self, text: str) -> bool:
        key = node_key(text)
        if not key:
            return False
        if key in self.exact:
            return True
        return any(same_node(text, known) for known in self.texts)


def _is_restatement(step: Step, clues: Sequence[Clue]) -> bool:
    """A single-input step that repeats an evidence line (reasoning often lists them first)."""
    if len(step.inputs) != 1:
        return False
    given = node_key(step.inputs[0])
    output = node_key(step.output)
    for clue in clues:
        if node_key(clue.text) == given and node_key(clue.implication) == output:
            return True
    return False


def _step_key(step: Step) -> tuple[frozenset[str], str]:
    return (
        frozenset(node_key(s) for s in step.inputs),
        node_key(step.output),
    )


def _check_steps(
    steps: Sequence[Step],
    clues: Sequence[Clue],
    known: _Nodes,
    section: str,
    issues: list[Issue],
    *,
    earlier: Sequence[Step] = (),
) -> None:
    """Check one section's steps; ``earlier`` are steps it may legitimately repeat."""
    derived = _Nodes()
    seen: dict[tuple[frozenset[str], str], int] = {}
    earlier_keys = {_step_key(step) for step in earlier}
    for step in steps:
        key = _step_key(step)
        restated = _is_restatement(step, clues) or key in earlier_keys
        for given in step.inputs:
            if given not in known and given not in derived:
                issues.append(
                    Issue(
                        "dangling_reference",
                        f"step input {given!r} is neither a clue, an implication nor an earlier step's output",
                        step.line_no,
                        section=section,
                    )
                )
        if key in seen:
            issues.append(
                Issue("repeated_step", f"step repeats line {seen[key]}: {step.output!r}", step.line_no, section=section)
            )
        elif not restated and step.output and (step.output in derived or step.output in known):
            issues.append(
                Issue("redundant_step", f"output {step.output!r} was already derived", step.line_no, section=section)
            )
        seen.setdefault(key, step.line_no)
        if step.output:
            derived.add(step.output)
    for text in derived.texts:
        known.add(text)


def check_graph(graph: ClueGraph, context: str, *, min_score: float = ANCHOR_MIN_SCORE) -> list[Issue]:
    """List the problems of a clue graph against its context.

    * ``unanchored_clue`` / ``fuzzy_clue``: a clue not found in the context
      (best score < ``min_score``) / found only approximately;
    * ``unparsed_line``: a line that is neither a clue, a step nor a header;
    * ``dangling_reference``: a step input that is not a clue text, an
      implication, or the output of an earlier step (evidence steps come before
      the reasoning); texts are compared lowercased with whitespace and quotes
      normalised, and count as equal from a token similarity of
      ``REFERENCE_MIN_SIMILARITY``;
    * ``repeated_step``: the same inputs and output twice in one section;
    * ``redundant_step``: a step whose output was already derived or is already
      an implication (a step that merely restates an evidence line is fine);
    * ``unused_clue``: a clue whose text and implication are never an input of
      a step (only when the graph has steps);
    * ``no_conclusion``: the graph has no steps, or its last step has no output.
    """
    issues: list[Issue] = []
    for clue, anchor in zip(graph.clues, anchor_clues(graph.clues, context, min_score=0.0)):
        if anchor is None or anchor.score < min_score:
            score = 0.0 if anchor is None else anchor.score
            issues.append(
                Issue("unanchored_clue", f"clue {clue.index + 1} not found in the context (best score {score:.2f})",
                      clue.line_no, clue.index, "evidence")
            )
        elif not anchor.exact:
            issues.append(
                Issue("fuzzy_clue", f"clue {clue.index + 1} matches the context only approximately (score {anchor.score:.2f}): {anchor.text!r}",
                      clue.line_no, clue.index, "evidence")
            )
    for section, line_no, text in graph.unparsed_lines:
        issues.append(Issue("unparsed_line", f"cannot parse {text!r}", line_no, section=section))

    known = _Nodes()
    for clue in graph.clues:
        known.add(clue.text)
        known.add(clue.implication)
    _check_steps(graph.evidence_steps, graph.clues, known, "evidence", issues)
    _check_steps(graph.steps, graph.clues, known, "reasoning", issues, earlier=graph.evidence_steps)

    all_steps = graph.all_steps
    if all_steps:
        used = _Nodes()
        for step in all_steps:
            if not _is_restatement(step, graph.clues):
                for given in step.inputs:
                    used.add(given)
        for clue in graph.clues:
            if clue.text not in used and clue.implication not in used:
                issues.append(
                    Issue("unused_clue", f"clue {clue.index + 1} is not used by any step", clue.line_no, clue.index, "evidence")
                )
    final = graph.steps[-1] if graph.steps else (graph.evidence_steps[-1] if graph.evidence_steps else None)
    if final is None:
        issues.append(Issue("no_conclusion", "the clue graph has no reasoning steps", section="reasoning"))
    elif not final.output.strip():
        issues.append(Issue("no_conclusion", "the last step has no conclusion", final.line_no, section="reasoning"))
    return issues

