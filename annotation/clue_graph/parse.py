"""Parse the two clue-graph texts of a DetectBench record.

Pure Python (standard library only, no Django) so that it can be imported and
tested alone.

A DetectBench record carries two texts:

``clue_graph.evidence``
    Primary evidence lines ``clue -> implication`` (sometimes numbered
    ``1. ...``).  About a third of the records then have a header line such as
    ``After correlating these clues:`` followed by combined lines
    ``A + B -> C`` (and sometimes a free-text conclusion).

``clue_graph.multi_hop_reasoning``
    Usually a header (``After correlating the clues:``) and steps
    ``A + B -> C``, the last one reaching the answer.  Often it first restates
    the evidence under its own header (``From the clues provided in the
    context:``) and then continues with a second header and the combined steps.

Line grammar used by the parser (per line, after stripping whitespace):

* blank lines are skipped;
* an optional numbering prefix is split off and kept: ``1. ``, ``2) ``,
  ``(3) ``, ``4、``, ``- ``, ``* ``, ``• ``, ``Clue 5: ``, ``Step 6: ``;
* a line containing ``->`` is a clue (evidence, before the first header) or a
  step (evidence after the header, and the whole reasoning).  The first ``->``
  separates a clue from its implication (the implication may itself contain
  ``->``).  A step line ``A + B -> C -> D`` becomes the steps ``A + B -> C``
  and ``C -> D`` (the second one has ``continues=True``); inputs are split on
  `` + `` unless that would cut a formula (a part of one or two characters, or
  a ``+`` inside brackets or quotes);
* a line without ``->`` whose last character is ``:`` is a header;
* anything else is an *unparsed line* (free-text conclusions such as
  ``Therefore, the answer is "56".``, or evidence written with ``-`` or
  ``leads to`` instead of an arrow).

Nothing here raises on any input string.
"""

from __future__ import annotations

import re

from annotation.clue_graph.data import ARROW, Clue, ClueGraph, Step

_NUMBERING = re.compile(
    r"""^(?:
        \d{1,3}\s*[.)、．](?=\s|$)      # 1.  2)  3、
      | \d{1,3}、                        # 4、 (no space needed)
      | \(\d{1,3}\)                     # (5)
      | [-*•·](?=\s)                    # bullets
      | (?:clue|step|evidence)\s*\d{1,3}\s*[:.：]   # Clue 1:
    )\s*""",
    re.IGNORECASE | re.VERBOSE,
)


def split_numbering(line: str) -> tuple[str, str]:
    """(numbering prefix, rest) of a line: ``"2) A -> B"`` gives ``("2) ", "A -> B")``."""
    match = _NUMBERING.match(line)
    if not match or match.end() >= len(line):
        return "", line
    return match.group(0), line[match.end():]


def is_header(body: str) -> bool:
    """A line without an arrow that ends with a colon (``After correlating the clues:``)."""
    return ARROW not in body and body.rstrip().endswith((":", "："))


def _lines(text: str | None) -> list[tuple[int, str]]:
    """Non-blank stripped lines with their 1-based line numbers."""
    if not text:
        return []
    out = []
    for line_no, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        line = raw.strip()
        if line:
            out.append((line_no, line))
    return out


def _split_inputs(left: str) -> tuple[str, ...]:
    left = left.strip()
    if " + " not in left:
        return (left,) if left else ()
    # Do not split a `+` inside brackets or quotes.
    parts: list[str] = []
    depth = 0
    in_quote = False
    start = 0
    # A whole line wrapped in quotes ('"A + B -> C"') leaves an unmatched
    # opening quote here: it does not protect the `+`.
    i = 1 if left.startswith('"') and left.count('"') % 2 == 1 else 0
    while i < len(left):
        ch = left[i]
        if ch in "([{（【":
            depth += 1
        elif ch in ")]}）】":
            depth = max(0, depth - 1)
        elif ch in '"“”':
            in_quote = not in_quote if ch == '"' else (ch == "“")
        elif left.startswith(" + ", i) and depth == 0 and not in_quote:
            parts.append(left[start:i])
            start = i + 3
            i += 3
            continue
        i += 1
    parts.append(left[start:])
    parts = [p.strip() for p in parts]
    # A formula such as `x + y = 144` is one input, not three.
    if len(parts) < 2 or any(len(p) <= 2 for p in parts):
        return (left,)
    return tuple(parts)


def _parse_step_line(body: str, line_no: int, prefix: str, header: str | None) -> list[Step]:
    segments = [s.strip() for s in body.split(ARROW)]
    steps = []
    inputs = _split_inputs(segments[0])
    for k, output in enumerate(segments[1:]):
        steps.append(
            Step(
                inputs=inputs,
                output=output,
                line_no=line_no,
                prefix=prefix if k == 0 else "",
                header=header if k == 0 else None,
                continues=k > 0,
            )
        )
        inputs = (output,) if output else ()
    return steps


def parse_evidence(evidence: str | None) -> tuple[tuple[Clue, ...], str | None, tuple[Step, ...], tuple[tuple[str, int, str], ...]]:
    """Parse an evidence text into (clues, header, combined steps, unparsed lines)."""
    clues: list[Clue] = []
    steps: list[Step] = []
    unparsed: list[tuple[str, int, str]] = []
    header: str | None = None
    pending: tuple[int, str] | None = None  # a later header, waiting for its step
    for line_no, line in _lines(evidence):
        prefix, body = split_numbering(line)
        if is_header(line):
            if header is None and clues:
                header = line
            elif header is not None and pending is None:
                pending = (line_no, line)
            else:
                unparsed.append(("evidence", line_no, line))
            continue
        if ARROW not in body:
            unparsed.append(("evidence", line_no, line))
            continue
        if header is None:
            text, _, implication = body.partition(ARROW)
            clues.append(Clue(len(clues), text.strip(), implication.strip(), line_no, prefix))
        else:
            steps.extend(_parse_step_line(body, line_no, prefix, pending[1] if pending else None))
            pending = None
    if pending is not None:
        unparsed.append(("evidence", *pending))
    unparsed.sort(key=lambda u: u[1])
    return tuple(clues), header, tuple(steps), tuple(unparsed)


def parse_reasoning(reasoning: str | None) -> tuple[tuple[Step, ...], str | None, tuple[tuple[str, int, str], ...]]:
    """Parse a multi-hop reasoning text into (steps, opening header, unparsed lines)."""
    steps: list[Step] = []
    unparsed: list[tuple[str, int, str]] = []
    header: str | None = None
    pending: tuple[int, str] | None = None  # a later header, waiting for its step
    for position, (line_no, line) in enumerate(_lines(reasoning)):
        prefix, body = split_numbering(line)
        if is_header(line):
            if position == 0:
                header = line
            elif pending is None:
                pending = (line_no, line)
            else:
                unparsed.append(("reasoning", line_no, line))
            continue
        if ARROW not in body:
            unparsed.append(("reasoning", line_no, line))
            continue
        steps.extend(_parse_step_line(body, line_no, prefix, pending[1] if pending else None))
        pending = None
    if pending is not None:
        unparsed.append(("reasoning", *pending))
    unparsed.sort(key=lambda u: u[1])
    return tuple(steps), header, tuple(unparsed)


def parse_clue_graph(evidence: str | None, reasoning: str | None) -> ClueGraph:
    """Parse the two clue-graph texts of a record (never raises)."""
    clues, evidence_header, evidence_steps, evidence_unparsed = parse_evidence(evidence)
    steps, reasoning_header, reasoning_unparsed = parse_reasoning(reasoning)
    return ClueGraph(
        clues=clues,
        steps=steps,
        evidence_header=evidence_header,
        reasoning_header=reasoning_header,
        unparsed_lines=evidence_unparsed + reasoning_unparsed,
        evidence_steps=evidence_steps,
    )


def gold_key_information(evidence: str | None) -> list[str]:
    """The gold key information of a record, as used by the KeyInfo ROUGE-L metric.

    Definition: the left-hand sides (text before the first ``->``) of the
    *primary* evidence lines, i.e. the arrow lines that come before the first
    header line (a line without ``->`` ending in ``:``, such as ``After
    correlating these clues:``), in order, with any numbering prefix (``1.``,
    ``2)``, ``(3)``, ``- ``, ``Clue 4:``) and surrounding whitespace removed;
    empty left-hand sides are dropped.  Combined ``A + B -> C`` lines after the
    header, the header itself and free-text lines are not key information.
    Fallback: if the evidence has no arrow line at all (a plain numbered list
    of clues, 11 of 1,563 records in v1.3), every non-header line, with its
    numbering removed, is one piece of key information.
    """
    clues, _, _, unparsed = parse_evidence(evidence)
    if clues:
        return [c.text for c in clues if c.text]
    if any(ARROW in line for _, line in _lines(evidence)):
        return []
    out = []
    for _, _, line in unparsed:
        if is_header(line):
            continue
        text = split_numbering(line)[1].strip()
        if text:
            out.append(text)
    return out

