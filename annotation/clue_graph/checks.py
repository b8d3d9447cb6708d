"""Check a clue graph against its context: every issue is one of the declared IssueKind values.

Pure Python (no Django). Step inputs are resolved to nodes by
:func:`.nodes.link_steps`, the same resolution the drawing uses.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from annotation.clue_graph.anchor import ANCHOR_MIN_SCORE, anchor_clues
from annotation.clue_graph.data import Clue, ClueGraph, Step
from annotation.clue_graph.nodes import NodeIndex, clue_node_id, is_talk, link_steps
from annotation.clue_graph.parse import is_header, split_numbering
from annotation.text import (
    CONTRACTION_PIECES,
    NEGATION_WORDS,
    QUANTIFIER_WORDS,
    REASONING_WORDS,
    content_words,
    node_key,
    numbers,
    word_key,
)
from foundation.words import gettext


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
    #: The text the issue is about (the step input of a dangling reference).
    subject: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", IssueKind(self.kind))


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


def _check_repeats(
    steps: Sequence[Step],
    clues: Sequence[Clue],
    known: NodeIndex,
    section: str,
    *,
    earlier: Sequence[Step] = (),
) -> list[list[Issue]]:
    """Repeated and redundant steps of one section, per step; ``earlier`` are steps it may legitimately repeat."""
    found: list[list[Issue]] = []
    derived = NodeIndex()
    seen: dict[tuple[frozenset[str], str], int] = {}
    earlier_keys = {_step_key(step) for step in earlier}
    for number, step in enumerate(steps):
        key = _step_key(step)
        restated = _is_restatement(step, clues) or key in earlier_keys
        issues: list[Issue] = []
        found.append(issues)
        if key in seen:
            issues.append(Issue(IssueKind.REPEATED_STEP, gettext("step repeats line %(line)s: %(output)s", line=seen[key], output=repr(step.output)),
                                step.line_no, section=section))
        elif not restated and step.output and (derived.find_same(step.output) or known.find_same(step.output)):
            issues.append(Issue(IssueKind.REDUNDANT_STEP, gettext("output %(output)s was already derived", output=repr(step.output)),
                                step.line_no, section=section))
        seen.setdefault(key, step.line_no)
        if step.output:
            derived.add(f"{section}{number}", step.output)
            known.add(f"{section}{number}", step.output)
    return found


def _says_something(text: str, nodes: NodeIndex, final: str) -> bool:
    """Whether a line that is not a clue, a step nor a header carries content the graph lacks.

    Not so: a header in an unexpected place, talk about the reasoning ("The answer
    is derived after correlating the above clues."), a sentence that refers to a
    node of the graph, and one that restates the final conclusion in more words
    (``Therefore, the missing number is "33".`` after a last step reaching 33) or
    gives the values it reached (``there are 700 soldiers`` after ``... x=700``).
    """
    body = split_numbering(text)[1]
    if is_header(body) or is_talk(body) or nodes.resolve(body) is not None:
        return False
    if final:
        if numbers(body) and numbers(body) == numbers(final):
            return False  # the same values as the last step: "... 700 soldiers." after "... x=700"
        restated = NodeIndex()
        restated.add("line", body)
        return restated.resolve(final) is None
    return True


def check_graph(graph: ClueGraph, context: str, *, min_score: float = ANCHOR_MIN_SCORE) -> list[Issue]:
    """List the problems of a clue graph against its context.

    * ``unanchored_clue`` / ``fuzzy_clue``: a clue not found in the context
      (best score < ``min_score``) / found only approximately;
    * ``unparsed_line``: a line that is neither a clue, a step nor a header and
      says something the graph does not (see :func:`_says_something`);
    * ``dangling_reference``: a step input that refers to no clue (text or
      implication) and no conclusion of an earlier step (evidence steps come
      before the reasoning), as resolved by :func:`.nodes.link_steps`;
    * ``repeated_step``: the same inputs and output twice in one section;
    * ``redundant_step``: a step whose output was already derived or is already
      an implication (a step that merely restates an evidence line is fine);
    * ``unused_clue``: a clue that no step input refers to (only when the graph
      has steps; a step that restates an evidence line does not count);
    * ``no_conclusion``: the graph has no steps, or its last step has no output.
    """
    issues: list[Issue] = []
    for clue, anchor in zip(graph.clues, anchor_clues(graph.clues, context, min_score=0.0)):
        if anchor is None or anchor.score < min_score:
            score = 0.0 if anchor is None else anchor.score
            issues.append(Issue(IssueKind.UNANCHORED_CLUE,
                                gettext("clue %(n)s not found in the context (best score %(score)s)", n=clue.index + 1,
                                        score=f"{score:.2f}"),
                                clue.line_no, clue.index, "evidence"))
        elif not anchor.exact:
            issues.append(Issue(IssueKind.FUZZY_CLUE,
                                gettext("clue %(n)s matches the context only approximately (score %(score)s): %(text)s",
                                        n=clue.index + 1, score=f"{anchor.score:.2f}", text=repr(anchor.text)),
                                clue.line_no, clue.index, "evidence"))

    links = link_steps(graph)
    every_node = NodeIndex()
    for clue in graph.clues:
        every_node.add(clue_node_id(clue.index), clue.text)
        every_node.add(clue_node_id(clue.index), clue.implication)
    for link in links:
        every_node.add(link.target, link.step.output)
    final = links[-1].step.output if links else ""
    for section, line_no, text in graph.unparsed_lines:
        if _says_something(text, every_node, final):
            issues.append(Issue(IssueKind.UNPARSED_LINE, gettext("cannot parse %(text)s", text=repr(text)), line_no, section=section))

    known = NodeIndex()
    for clue in graph.clues:
        known.add(clue_node_id(clue.index), clue.text)
        known.add(clue_node_id(clue.index), clue.implication)
    repeats = _check_repeats(graph.evidence_steps, graph.clues, known, "evidence")
    repeats += _check_repeats(graph.steps, graph.clues, known, "reasoning", earlier=graph.evidence_steps)
    for link, step_issues in zip(links, repeats):
        for given, sources in zip(link.step.inputs, link.sources):
            if sources is None:
                issues.append(Issue(IssueKind.DANGLING_REFERENCE,
                                    gettext("step input %(input)s is neither a clue, an implication nor an earlier step's output",
                                            input=repr(given)),
                                    link.step.line_no, section=link.section, subject=given))
        issues.extend(step_issues)

    if links:
        used = {node for link in links if not _is_restatement(link.step, graph.clues)
                for ids in link.sources if ids for node in ids}
        for clue in graph.clues:
            if clue_node_id(clue.index) not in used:
                issues.append(Issue(IssueKind.UNUSED_CLUE, gettext("clue %(n)s is not used by any step", n=clue.index + 1),
                                    clue.line_no, clue.index, "evidence"))
    final = graph.steps[-1] if graph.steps else (graph.evidence_steps[-1] if graph.evidence_steps else None)
    if final is None:
        issues.append(Issue(IssueKind.NO_CONCLUSION, gettext("the clue graph has no reasoning steps"), section="reasoning"))
    elif not final.output.strip():
        issues.append(Issue(IssueKind.NO_CONCLUSION, gettext("the last step has no conclusion"), final.line_no,
                            section="reasoning"))
    return issues


# Options often differ only in "no" / "not" / "all" or in a letter naming a person ("D is ..."):
# those words count when a conclusion is compared with the options.
_DISTINGUISHING = NEGATION_WORDS | QUANTIFIER_WORDS | CONTRACTION_PIECES


def _option_words(text: str) -> set[str]:
    return content_words(text, ignore=REASONING_WORDS, keep=_DISTINGUISHING)


def reaches_answer(final_output: str | None, options: Sequence[str], answer_index: int) -> bool:
    """Rule 3.3: the last conclusion names the correct option better than any other option.

    An option's score is the larger of the share of its content words found in the
    conclusion and the similarity of the two wordings; the correct option must score
    highest, alone, and at least 0.5.
    """
    if not final_output or not 0 <= answer_index < len(options):
        return False
    target = word_key(final_output)
    reached = _option_words(final_output)
    scores = []
    for option in options:
        words = _option_words(option)
        overlap = len(words & reached) / len(words) if words else 0.0
        scores.append(max(overlap, SequenceMatcher(None, word_key(option), target).ratio()))
    best = max(scores)
    return scores[answer_index] == best and best >= 0.5 and scores.count(best) == 1


def answer_issue(final_output: str | None, options: Sequence[str], answer_index: int, answer_text: str) -> Issue | None:
    """The ``no_answer`` issue when the last conclusion does not name the correct option, else None."""
    if reaches_answer(final_output, options, answer_index):
        return None
    return Issue(IssueKind.NO_ANSWER, gettext("the last conclusion does not name the answer “%(answer)s”", answer=answer_text),
                 section="reasoning")
