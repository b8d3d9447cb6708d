"""Write a clue graph back in the official DetectBench format (pure Python, no Django)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from annotation.clue_graph.data import ARROW, DEFAULT_EVIDENCE_HEADER, DEFAULT_REASONING_HEADER, Clue, Step


def render_evidence(
    clues: Sequence[Clue] | Sequence[tuple[str, str]],
    header: str | None = DEFAULT_EVIDENCE_HEADER,
    steps: Sequence[Step] | Sequence[tuple[Sequence[str] | str, str]] = (),
    *,
    numbering: bool | None = None,
) -> str:
    """Write evidence back in the official format: ``clue -> implication`` per line.

    ``clues`` are :class:`Clue` objects or ``(text, implication)`` pairs.  If
    ``steps`` (combined lines) are given they follow the ``header`` line.
    ``numbering``: ``None`` keeps each Clue's own prefix, ``True`` numbers the
    clues ``1. 2. ...``, ``False`` writes no numbering.

    Round trip: ``render_evidence(g.clues, g.evidence_header, g.evidence_steps)``
    reproduces the evidence text when it had no unparsed lines, except that
    blank lines and leading/trailing whitespace on lines are dropped and a
    chained line's arrows are written as `` -> ``.
    """
    lines = []
    for i, clue in enumerate(clues):
        if isinstance(clue, Clue):
            text, implication, prefix = clue.text, clue.implication, clue.prefix
        else:
            text, implication = clue
            prefix = ""
        if numbering is True:
            prefix = f"{i + 1}. "
        elif numbering is False:
            prefix = ""
        lines.append(_arrow_line(prefix + text.strip(), implication.strip()))
    if steps:
        if header:
            lines.append(header.strip())
        lines.extend(_render_steps(steps, numbering=numbering))
    return "\n".join(lines)


def render_reasoning(
    steps: Sequence[Step] | Sequence[tuple[Sequence[str] | str, str]],
    header: str | None = DEFAULT_REASONING_HEADER,
    *,
    numbering: bool | None = None,
) -> str:
    """Write reasoning back in the official format: header, then ``A + B -> C`` lines.

    ``steps`` are :class:`Step` objects or ``(inputs, output)`` pairs.  A Step's
    own ``header`` is written before it and a step with ``continues=True`` is
    appended to the previous line (``A -> B -> C``).

    Round trip: ``render_reasoning(g.steps, g.reasoning_header)`` reproduces
    the reasoning text when it had no unparsed lines (same caveats as
    :func:`render_evidence`).
    """
    lines = [header.strip()] if header else []
    lines.extend(_render_steps(steps, numbering=numbering))
    return "\n".join(lines)


def _arrow_line(left: str, right: str) -> str:
    return f"{left} {ARROW} {right}" if right else f"{left} {ARROW}"


def _render_steps(steps: Iterable, *, numbering: bool | None) -> list[str]:
    lines: list[str] = []
    number = 0
    for step in steps:
        if isinstance(step, Step):
            inputs, output, prefix, header, continues = (
                step.inputs, step.output, step.prefix, step.header, step.continues,
            )
        else:
            inputs, output = step
            prefix, header, continues = "", None, False
        if isinstance(inputs, str):
            inputs = (inputs,)
        left = " + ".join(s.strip() for s in inputs)
        if continues and lines:
            lines[-1] = _arrow_line(lines[-1], output.strip())
            continue
        number += 1
        if numbering is True:
            prefix = f"{number}. "
        elif numbering is False:
            prefix = ""
        if header:
            lines.append(header.strip())
        lines.append(_arrow_line(prefix + left, output.strip()))
    return lines

