"""The data of a clue graph: clues, steps and the parsed graph (pure Python, no Django)."""
from __future__ import annotations

from dataclasses import dataclass

ARROW = "->"
DEFAULT_EVIDENCE_HEADER = "After correlating these clues:"
DEFAULT_REASONING_HEADER = "After correlating the clues we get:"


@dataclass(frozen=True)
class Clue:
    """One primary evidence line ``text -> implication``.

    ``index`` is the 0-based position among the graph's clues, ``line_no`` the
    1-based line of the evidence text, ``prefix`` the numbering written before
    the clue (``"1. "``), kept so that the text can be re-rendered unchanged.
    """

    index: int
    text: str
    implication: str
    line_no: int
    prefix: str = ""


@dataclass(frozen=True)
class Step:
    """One reasoning step ``A + B -> C``.

    ``header`` is a header line written directly before this step inside its
    section (e.g. the ``After correlating the clues:`` that follows a restated
    list of clues); ``continues`` marks the second and later steps of a chained
    line ``A -> B -> C`` (rendered on the same line as the previous step).
    """

    inputs: tuple[str, ...]
    output: str
    line_no: int
    prefix: str = ""
    header: str | None = None
    continues: bool = False


@dataclass(frozen=True)
class ClueGraph:
    """A parsed clue graph.

    ``clues``: primary evidence lines (before the evidence header).
    ``steps``: every step of the reasoning text, in order.
    ``evidence_header``: the header that ends the primary evidence lines.
    ``reasoning_header``: the header on the first line of the reasoning.
    ``unparsed_lines``: ``(section, line_no, text)`` with section
    ``"evidence"`` or ``"reasoning"``.
    ``evidence_steps``: combined ``A + B -> C`` lines found in the evidence
    after its header.
    """

    clues: tuple[Clue, ...]
    steps: tuple[Step, ...]
    evidence_header: str | None
    reasoning_header: str | None
    unparsed_lines: tuple[tuple[str, int, str], ...]
    evidence_steps: tuple[Step, ...] = ()

    @property
    def all_steps(self) -> tuple[Step, ...]:
        return self.evidence_steps + self.steps


