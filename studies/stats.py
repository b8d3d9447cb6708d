"""Summary statistics for human studies: pure Python, no Django.

Agreement (Fleiss' kappa) comes from annotation.agreement, the one implementation
shared with the curation workflow.
"""
from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class AccuracySummary:
    """Paper Table 3: average, top and lowest participant accuracy, over n participants."""

    n: int
    average: float | None
    top: float | None
    lowest: float | None


def accuracy_summary(per_participant: Sequence[tuple[int, int]]) -> AccuracySummary:
    """From (correct, answered) per participant; participants with nothing answered are left out."""
    accs = [c / a for c, a in per_participant if a > 0]
    if not accs:
        return AccuracySummary(0, None, None, None)
    return AccuracySummary(len(accs), sum(accs) / len(accs), max(accs), min(accs))


def majority(chosen: Sequence[int]) -> int | None:
    """The most chosen category; None on a tie for first place or no ratings."""
    if not chosen:
        return None
    ranked = Counter(chosen).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def histogram(values: Sequence[float], *, bins: int = 12) -> list[tuple[float, float, int]]:
    """Equal-width bins (lo, hi, count) over [0, max(values)]."""
    if not values:
        return []
    top = max(values) or 1.0
    width = top / bins
    counts = [0] * bins
    for v in values:
        counts[min(int(v / width), bins - 1)] += 1
    return [(i * width, (i + 1) * width, counts[i]) for i in range(bins)]


def histogram_svg(values: Sequence[float], *, unit: str = "s", width: int = 480, height: int = 160,
                  label: str = "") -> str:
    """A small self-contained SVG bar chart of the distribution of `values` (server-rendered)."""
    bins = histogram(values)
    if not bins:
        return ""
    pad_left, pad_bottom, pad_top = 30, 28, 10
    plot_w, plot_h = width - pad_left - 10, height - pad_bottom - pad_top
    peak = max(c for _, _, c in bins) or 1
    bar_w = plot_w / len(bins)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(label)}">',
        f'<line x1="{pad_left}" y1="{pad_top + plot_h}" x2="{width - 10}" y2="{pad_top + plot_h}" stroke="#5f6b7a"/>',
        f'<text x="4" y="{pad_top + 10}" font-size="10" fill="#5f6b7a">{peak}</text>',
    ]
    for i, (lo, hi, count) in enumerate(bins):
        h = plot_h * count / peak
        x = pad_left + i * bar_w
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{pad_top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
            f'fill="#2457c5"><title>{lo:.0f}–{hi:.0f} {unit}: {count}</title></rect>'
        )
    for i in (0, len(bins) // 2, len(bins)):
        x = pad_left + i * bar_w
        value = bins[0][0] + i * (bins[0][1] - bins[0][0])
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" font-size="10" text-anchor="middle" fill="#5f6b7a">{value:.0f}{unit}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
