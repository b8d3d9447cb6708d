"""The clue graph as editable rows, the editor's operations, and back to the official texts (pure Python).

The clue-graph screen edits clues (``text -> implication``) and reasoning steps
(``A + B -> C``). Saving writes ``evidence`` and ``multi_hop_reasoning`` in the
official format with render.render_evidence / render_reasoning. Parts the
screen does not edit are kept as they were: the evidence header and the
combined steps that follow it, the step headers, the numbering style of the
clues and of the steps (``1. ``, ``(1) ``, ``- ``; rows are renumbered after
edits), and lines that do not parse (free-text conclusions), which are appended
unchanged.

The editor's operations are here too: the rows it shows (anchors, the inputs a
step may choose), its checks (with ``no_answer``), its structural actions and
snapping a selected context span to clean boundaries (:func:`editor_view`,
:func:`apply_action`, :func:`snap_span`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from annotation.clue_graph.anchor import ANCHOR_MIN_SCORE, Anchor, anchor_clues
from annotation.clue_graph.checks import Issue, IssueKind, answer_issue, check_graph
from annotation.clue_graph.data import DEFAULT_EVIDENCE_HEADER, DEFAULT_REASONING_HEADER, Clue, ClueGraph, Step
from annotation.clue_graph.drawing import DrawnGraph, draw_graph
from annotation.clue_graph.nodes import clue_node_id, link_steps
from annotation.clue_graph.parse import parse_clue_graph
from annotation.clue_graph.render import render_evidence, render_reasoning
from foundation.numerals import is_number


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
    def from_data(cls, data: dict) -> EditableGraph:
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

    def with_clue_text(self, index: int, text: str) -> EditableGraph:
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


# --------------------------------------------------------------------------
# The editor's operations


@dataclass(frozen=True)
class ClueRow:
    """A clue as the editor shows it; ``state`` is "exact", "fuzzy" or "unanchored"."""

    index: int
    number: int
    text: str
    implication: str
    state: str
    anchor: Anchor | None


@dataclass(frozen=True)
class StepInput:
    """One input of a step and what it refers to, resolved as the checks and the drawing resolve it
    (:func:`.nodes.link_steps` on the graph as it will be saved): ``refers_to`` names the nodes
    ("clue 2", "S1"), ``dangling`` when it refers to nothing; both empty when the text does not come
    back as one input of the saved step (a " + " inside it makes two)."""

    text: str
    refers_to: str = ""
    dangling: bool = False


@dataclass(frozen=True)
class StepRow:
    """A step as the editor shows it: ``options`` are (value, label, chosen) for each node it may use,
    ``extra`` the inputs that are none of them, joined with `` + ``; ``inputs`` every input with what
    it refers to."""

    index: int
    number: int
    output: str
    header: str
    options: list[tuple[str, str, bool]]
    extra: str
    inputs: tuple[StepInput, ...] = ()


@dataclass(frozen=True)
class EditorView:
    """Everything the clue-graph screen shows for a graph besides the page itself."""

    clue_rows: list[ClueRow]
    step_rows: list[StepRow]
    issues: list[Issue]
    #: Highlights of the context: (start, end, clue index, exact).
    spans: list[tuple[int, int, int, bool]]
    drawn: DrawnGraph
    unanchored: int
    fuzzy: int


def clue_rows(graph: EditableGraph, context: str) -> list[ClueRow]:
    anchors = anchor_clues([t for t, _ in graph.clues], context, min_score=0.0)
    rows = []
    for i, ((text, implication), anchor) in enumerate(zip(graph.clues, anchors)):
        state = ("unanchored" if anchor is None or anchor.score < ANCHOR_MIN_SCORE
                 else "exact" if anchor.exact else "fuzzy")
        rows.append(ClueRow(i, i + 1, text, implication, state, anchor))
    return rows


def step_rows(graph: EditableGraph, clues: Sequence[ClueRow]) -> list[StepRow]:
    """Each step with the nodes it may choose from (every clue text and implication, every earlier output)
    and its inputs with what each refers to."""
    choices, earlier = [], []
    for row in clues:
        choices.append((row.text, f"{row.number}: {row.text}"))
        choices.append((row.implication, f"{row.number} ⇒ {row.implication}"))
    references = step_input_references(graph)
    rows = []
    for i, step in enumerate(graph.steps):
        offered = choices + [(o, f"S{j + 1} ⇒ {o}") for j, o in enumerate(earlier)]
        values = {v for v, _ in offered}
        rows.append(StepRow(i, i + 1, step.output, step.header or "",
                            [(v, label, v in step.inputs) for v, label in offered if v.strip()],
                            " + ".join(x for x in step.inputs if x not in values), references[i]))
        earlier.append(step.output)
    return rows


def step_input_references(graph: EditableGraph) -> list[tuple[StepInput, ...]]:
    """Per step, its inputs with the nodes :func:`.nodes.link_steps` resolves them to in the graph as saved."""
    links = link_steps(graph.parsed())
    evidence = [link for link in links if link.section == "evidence"]
    reasoning = [link for link in links if link.section == "reasoning"]
    kept = [i for i, step in enumerate(graph.steps) if step.output.strip() or any(x.strip() for x in step.inputs)]
    names = {link.target: f"evidence step {n}" for n, link in enumerate(evidence, 1)}
    for row, link in zip(kept, reasoning):
        names.setdefault(link.target, f"S{row + 1}")
    # A row that does not come back from the text as one step (it would misalign the rest): no notes at all.
    by_row = dict(zip(kept, reasoning)) if len(reasoning) == len(kept) else {}
    # The saved graph leaves out empty rows: its clue k is the k-th clue row that is not empty.
    filled = [i for i, (text, implication) in enumerate(graph.clues) if text.strip() or implication.strip()]
    clue_names = {clue_node_id(k): f"clue {row + 1}" for k, row in enumerate(filled)}
    result = []
    for i, step in enumerate(graph.steps):
        link = by_row.get(i)
        found = dict(zip(link.step.inputs, link.sources)) if link else {}
        inputs = []
        for text in step.inputs:
            if text.strip() not in found:
                inputs.append(StepInput(text))
                continue
            sources = found[text.strip()]
            inputs.append(StepInput(text, ", ".join(clue_names.get(node) or names.get(node, node)
                                                    for node in sources or ()), sources is None))
        result.append(tuple(inputs))
    return result


def editor_view(graph: EditableGraph, *, context: str, options: Sequence[str], answer_index: int,
                answer_text: str) -> EditorView:
    """Rows, checks, highlights and the drawing of a graph being edited for an item."""
    clues = clue_rows(graph, context)
    parsed = graph.parsed()
    issues = [issue for issue in check_graph(parsed, context)
              if issue.kind not in (IssueKind.UNANCHORED_CLUE, IssueKind.FUZZY_CLUE)]
    if graph.steps:
        missing = answer_issue(graph.steps[-1].output, options, answer_index, answer_text)
        if missing is not None:
            issues.append(missing)
    # The parsed graph leaves out empty rows: clue k of it is the k-th row that is not empty.
    kept = [row for row in clues if row.text.strip() or row.implication.strip()]
    drawn = draw_graph(parsed, unanchored=[k for k, row in enumerate(kept) if row.state == "unanchored"],
                       fuzzy=[k for k, row in enumerate(kept) if row.state == "fuzzy"])
    return EditorView(
        clue_rows=clues,
        step_rows=step_rows(graph, clues),
        issues=issues,
        spans=[(row.anchor.start, row.anchor.end, row.index, row.anchor.exact)
               for row in clues if row.anchor is not None and row.state != "unanchored"],
        drawn=drawn,
        unanchored=sum(row.state == "unanchored" for row in clues),
        fuzzy=sum(row.state == "fuzzy" for row in clues),
    )


def snap_span(context: str, start: int, end: int) -> tuple[int, int]:
    """A selected span of the context without surrounding whitespace and trailing punctuation."""
    start, end = max(0, start), min(len(context), end)
    while start < end and context[start].isspace():
        start += 1
    while end > start and context[end - 1] in " \n\t.,;:":
        end -= 1
    return start, end


def apply_action(graph: EditableGraph, context: str, fields: Mapping[str, str]) -> tuple[EditableGraph, str | None]:
    """Structural edits of the editor: add/remove rows, replace a clue by a span of the context.

    ``fields`` are the submitted form fields: ``action`` (``add_clue``, ``remove_clue:<i>``,
    ``add_step``, ``remove_step:<i>``, ``fix:<clue>:<start>:<end>`` or ``select``, which reads
    ``fix_clue``, ``fix_start``, ``fix_end`` and ``fix_text``). Returns the graph and a message
    when the action cannot be applied.
    """
    action = fields.get("action", "")
    name, _, rest = action.partition(":")
    if name == "add_clue":
        graph.clues.append(("", ""))
    elif name == "remove_clue" and is_number(rest) and int(rest) < len(graph.clues):
        graph.clues.pop(int(rest))
    elif name == "add_step":
        graph.steps.append(EditableStep([], ""))
    elif name == "remove_step" and is_number(rest) and int(rest) < len(graph.steps):
        graph.steps.pop(int(rest))
    elif name in ("fix", "select"):
        try:
            if name == "fix":
                index, start, end = (int(x) for x in rest.split(":"))
                text = None
            else:
                index, start, end = (int(fields.get(key) or 0) for key in ("fix_clue", "fix_start", "fix_end"))
                text = fields.get("fix_text", "")
        except ValueError:
            return graph, "the span to use is not valid: pick the text again"
        if not 0 <= index < len(graph.clues):
            return graph, "choose a clue first"
        if text and context[start:end] != text:
            # Offsets from the browser can drift (e.g. line endings): fall back to finding the selected text.
            found = context.find(text.strip())
            if found < 0:
                return graph, "the selected text is not part of the context"
            start, end = found, found + len(text.strip())
        start, end = snap_span(context, start, end)
        if start >= end:
            return graph, "empty selection"
        graph = graph.with_clue_text(index, context[start:end])
    return graph, None
