"""Figures as server-rendered SVG strings (no Django, no JavaScript chart library, no CDN)."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # in [0, 1]
    low: float | None = None
    high: float | None = None
    note: str = ""
    baseline: float | None = None  # e.g. what always answering the first option scores on the same rows


def bar_chart(bars: list[Bar], *, title: str, baseline_label: str = "always first option",
              width: int = 640, bar_height: int = 22) -> str:
    """Horizontal bars in [0, 1] with optional 95% interval whiskers and a dashed baseline mark per bar.

    Each bar has its own baseline: runs with original and permuted options (or question
    types) have different ones, so a single line for all would mislead.
    """
    left, right, top = 260, 60, 34
    plot = width - left - right
    height = top + len(bars) * (bar_height + 8) + 30
    x = lambda v: left + plot * max(0.0, min(1.0, v))  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}" class="figure">',
        f'<text x="{left}" y="18" font-size="14" font-weight="600">{escape(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{height - 24}" stroke="#dde1e7"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 8}" font-size="11" text-anchor="middle" fill="#5f6b7a">'
                     f'{int(tick * 100)}%</text>')
    for i, bar in enumerate(bars):
        y = top + i * (bar_height + 8)
        parts.append(f'<text x="{left - 8}" y="{y + bar_height * 0.7:.1f}" font-size="12" text-anchor="end">'
                     f'{escape(_shorten(bar.label, 40))}<title>{escape(bar.label)}</title></text>')
        if bar.baseline is not None:
            parts.append(f'<line class="baseline" x1="{x(bar.baseline):.1f}" x2="{x(bar.baseline):.1f}" y1="{y - 3}" '
                         f'y2="{y + bar_height + 3}" stroke="#b3261e" stroke-dasharray="3,2" stroke-width="2">'
                         f'<title>{escape(baseline_label)}: {bar.baseline:.1%}</title></line>')
        if bar.value is None:
            continue
        parts.append(f'<rect x="{left}" y="{y}" width="{x(bar.value) - left:.1f}" height="{bar_height}" fill="#2457c5" '
                     f'opacity="0.85"><title>{escape(bar.label)}: {bar.value:.1%} {escape(bar.note)}</title></rect>')
        if bar.low is not None and bar.high is not None:
            mid = y + bar_height / 2
            parts.append(f'<line x1="{x(bar.low):.1f}" x2="{x(bar.high):.1f}" y1="{mid}" y2="{mid}" stroke="#1d2330" '
                         f'stroke-width="1.5"/>')
            for end in (bar.low, bar.high):
                parts.append(f'<line x1="{x(end):.1f}" x2="{x(end):.1f}" y1="{mid - 5}" y2="{mid + 5}" stroke="#1d2330"/>')
        parts.append(f'<text x="{x(max(bar.value, bar.high or 0)) + 6:.1f}" y="{y + bar_height * 0.7:.1f}" '
                     f'font-size="11">{bar.value:.1%}</text>')
    if any(bar.baseline is not None for bar in bars):
        # Below the plot, under the labels, so it never runs into the title.
        parts.append(f'<text x="8" y="{height - 8}" font-size="11" fill="#b3261e">'
                     f'red mark: {escape(baseline_label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
