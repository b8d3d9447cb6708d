"""The trust page's figures as inline SVG, drawn on the server with matplotlib (no CDN, no
JavaScript): the reliability diagram with the count of each bin, and the coverage/agreement
curve. Takes the plain data of `annotation.trust`; no Django.
"""
from __future__ import annotations

import io
import re

# A bare Figure (not pyplot) draws without any display or global backend state.
from matplotlib.figure import Figure

SIZE = (4.6, 3.4)
BAR = "#4c78a8"
LINE = "#888888"


def _svg(figure: Figure, label: str) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    svg = text[text.index("<svg"):]
    # The inline SVG scales with its card: drop the fixed size, keep the viewBox.
    head, rest = svg.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    return f'{head} class="figure" role="img" aria-label="{label}">{rest}'


def reliability_svg(bins: list[dict], *, title: str = "Reliability") -> str:
    """Bars: agreement with people per belief bin; the diagonal is perfect calibration; the
    number over each bar is its count of reviews."""
    figure = Figure(figsize=SIZE)
    axes = figure.add_subplot()
    width = bins[0]["upper"] - bins[0]["lower"] if bins else 0.1
    for b in bins:
        if not b["count"]:
            continue
        axes.bar(b["lower"], b["agreement"], width=width, align="edge", color=BAR, edgecolor="white")
        axes.plot([b["lower"], b["upper"]], [b["mean_belief"]] * 2, color="black", linewidth=1)
        axes.annotate(f"n={b['count']}", (b["lower"] + width / 2, min(b["agreement"], 0.92) + 0.02),
                      ha="center", fontsize=7)
    axes.plot([0, 1], [0, 1], linestyle="--", color=LINE, linewidth=1)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.05)
    axes.set_xlabel("judge's belief")
    axes.set_ylabel("agreement with people")
    axes.set_title(title, fontsize=10)
    return _svg(figure, title)


def coverage_svg(curve: list[dict], *, threshold: float | None = None) -> str:
    """Coverage (share of labels with belief >= t) and agreement above t, against t."""
    figure = Figure(figsize=SIZE)
    axes = figure.add_subplot()
    xs = [p["threshold"] for p in curve]
    axes.plot(xs, [p["coverage"] if p["coverage"] is not None else float("nan") for p in curve],
              label="coverage", color=LINE)
    axes.plot(xs, [p["agreement"] if p["agreement"] is not None else float("nan") for p in curve],
              label="agreement above t", color=BAR, marker="o", markersize=3)
    if threshold is not None:
        axes.axvline(threshold, color="black", linestyle=":", linewidth=1)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.05)
    axes.set_xlabel("threshold t on the judge's belief")
    axes.legend(fontsize=7, loc="lower left")
    axes.set_title("Coverage and agreement", fontsize=10)
    return _svg(figure, "Coverage and agreement")
