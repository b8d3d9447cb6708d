"""Split a text into plain and highlighted segments for display (no Django inside)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    text: str
    marks: tuple[int, ...] = ()  # indexes of the spans covering this segment (empty = plain text)
    exact: bool = True


def segments(text: str, spans: Iterable[tuple[int, int, int, bool]]) -> list[Segment]:
    """Cut `text` at every span boundary. spans: (start, end, label, exact); overlaps are allowed."""
    spans = [(max(0, s), min(len(text), e), label, exact) for s, e, label, exact in spans if e > s]
    cuts = sorted({0, len(text), *(s for s, _, _, _ in spans), *(e for _, e, _, _ in spans)})
    out: list[Segment] = []
    for a, b in zip(cuts, cuts[1:]):
        if a == b:
            continue
        covering = [(label, exact) for s, e, label, exact in spans if s <= a and b <= e]
        out.append(Segment(text[a:b], tuple(label for label, _ in covering), all(exact for _, exact in covering)))
    return out
