"""Figures drawn on the server with matplotlib (a bare Figure: no pyplot, no display, Agg for PNG):
inline SVG for the pages (text as text, presentation attributes instead of styles, so the page's
Content-Security-Policy needs no inline styles), PNG and PDF (TrueType fonts, readable and editable
in a paper) for downloads. Takes the plain data of evaluation.figures.data; no Django.

matplotlib and numpy are imported inside the functions that draw (the pages import this module at URL loading;
the first figure a process draws pays for them).
"""
from __future__ import annotations

import functools
import io
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from annotation.trust_figure import SVG_NS, _prefix_ids, _presentation_attributes, fonts
from evaluation.figures.data import Grouped, Scatter
from foundation.words import gettext

FORMATS = {"svg": "image/svg+xml", "png": "image/png", "pdf": "application/pdf"}
STYLE = {"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False,
         "svg.fonttype": "none", "pdf.fonttype": 42, "ps.fonttype": 42, "savefig.dpi": 200}
COLORS = ("#2457c5", "#d9822b", "#3a9b5c", "#b3261e", "#7d4fb0", "#5f6b7a", "#c2a500", "#1b8c99")
BASELINE = "#b3261e"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _color(index: int, count: int):
    """Distinct colours: the house palette for a few series, matplotlib's tab20 for more."""
    import matplotlib

    if count <= len(COLORS):
        return COLORS[index]
    return matplotlib.colormaps["tab20"](index % 20)
def style() -> dict:
    """The house style with the fonts this machine has for Chinese labels."""
    return {**STYLE, **fonts()}


#: rcParams are global: one figure at a time is built and saved (threads of one server process).
_LOCK = threading.RLock()


def _plain(text: str) -> str:
    """Text as written: a '$' would start matplotlib's math mode."""
    return text.replace("$", r"\$")


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass
class Drawn:
    """A figure and the tooltips of its parts: gid -> (CSS class or "", title text)."""

    figure: Figure
    label: str
    tips: dict[str, tuple[str, str]]


def _figure(size: tuple[float, float]) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size)
    FigureCanvasAgg(figure)
    return figure


def inline_svg(drawn: Drawn) -> str:
    """The figure as an <svg> element for a page (ids prefixed, scales with its container)."""
    import matplotlib

    with _LOCK, matplotlib.rc_context(style()):
        buffer = io.StringIO()
        drawn.figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    root = ET.fromstring(buffer.getvalue().encode())
    for element in root.iter():
        tip = drawn.tips.get(element.get("id", ""))
        if tip:
            css, title = tip
            if css:
                element.set("class", css)
            node = ET.Element(f"{{{SVG_NS}}}title")
            node.text = title
            element.insert(0, node)
    _presentation_attributes(root)
    _prefix_ids(root, re.sub(r"[^a-z0-9]+", "-", drawn.label.lower()).strip("-") or "figure")
    root.attrib.pop("width", None)
    root.attrib.pop("height", None)
    root.set("class", "figure")
    root.set("role", "img")
    root.set("aria-label", drawn.label)
    return ET.tostring(root, encoding="unicode")


def render(drawn: Drawn, fmt: str) -> bytes:
    """The figure as a file: png, pdf or a standalone svg (text as paths: looks the same everywhere)."""
    import matplotlib

    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}; choose from {', '.join(FORMATS)}")
    rc = {**style(), "svg.fonttype": "path"}
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}, "png": {}}[fmt]
    with _LOCK, matplotlib.rc_context(rc):
        buffer = io.BytesIO()
        drawn.figure.savefig(buffer, format=fmt, bbox_inches="tight", metadata=metadata)
    return buffer.getvalue()


# --------------------------------------------------------------------------- bars (run and comparison pages)

@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # in [0, 1]
    low: float | None = None
    high: float | None = None
    note: str = ""
    baseline: float | None = None  # e.g. what always answering the first option scores on the same rows


def bar_chart(bars: list[Bar], *, title: str, baseline_label: str = "") -> str:
    """Horizontal bars in [0, 1] with 95% interval whiskers and a dashed baseline mark per bar, as inline SVG.

    Each bar has its own baseline: runs with original and permuted options (or question
    types) have different ones, so a single line for all would mislead. Drawing takes a
    tenth of a second or more, so the same bars are drawn once per process (a finished run's
    page is read many times).
    """
    baseline_label = baseline_label or gettext("always first option")
    mark = gettext("red dashed mark: %(what)s", what=baseline_label)
    return _bar_chart(tuple(bars), title, baseline_label, mark)  # words resolved here: cached per language


@functools.lru_cache(maxsize=256)
def _bar_chart(bars: tuple[Bar, ...], title: str, baseline_label: str, mark: str) -> str:
    import matplotlib

    with _LOCK, matplotlib.rc_context(style()):
        figure = _figure((6.4, 0.9 + 0.34 * max(1, len(bars))))
        axes = figure.add_subplot()
        tips: dict[str, tuple[str, str]] = {}
        ys = list(range(len(bars)))[::-1]
        for y, (i, bar) in zip(ys, enumerate(bars)):
            if bar.value is not None:
                (rect,) = axes.barh([y], [bar.value], height=0.62, color=COLORS[0], alpha=0.85)
                rect.set_gid(f"bar-{i}")
                tips[f"bar-{i}"] = ("bar", f"{bar.label}: {bar.value:.1%} {bar.note}".strip())
                if bar.low is not None and bar.high is not None:
                    axes.errorbar([bar.value], [y], xerr=[[bar.value - bar.low], [bar.high - bar.value]],
                                  fmt="none", ecolor="#1d2330", elinewidth=1, capsize=3)
                axes.text(max(bar.value, bar.high or 0) + 0.01, y, f"{bar.value:.1%}", va="center", fontsize=8)
            if bar.baseline is not None:
                line = axes.vlines(bar.baseline, y - 0.42, y + 0.42, colors=BASELINE, linestyles="dashed",
                                   linewidth=2)
                line.set_gid(f"baseline-{i}")
                tips[f"baseline-{i}"] = ("baseline", f"{baseline_label}: {bar.baseline:.1%}")
        axes.set_yticks(ys, [_plain(_shorten(b.label, 40)) for b in bars])
        axes.set_xlim(0, 1.08)
        axes.set_ylim(-0.7, len(bars) - 0.3)
        axes.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
        axes.grid(axis="x", color="#dde1e7", linewidth=0.8)
        axes.set_axisbelow(True)
        axes.set_title(_plain(title), loc="left")
        if any(bar.baseline is not None for bar in bars):
            figure.text(0.01, 0.0, _plain(mark), color=BASELINE, fontsize=8)
    return inline_svg(Drawn(figure, title, tips))


# --------------------------------------------------------------------------- the paper's figures

def _caption(figure: Figure, text: str) -> None:
    if text:
        figure.text(0.01, -0.02, _plain(text), fontsize=7, color="#5f6b7a", va="top", wrap=True)


def _r_text(data: Scatter, unit: str) -> str:
    if data.r is None:
        return gettext("r undefined (n = %(n)s %(unit)s)", n=data.n, unit=unit)
    p = "" if data.p_value is None else f", p = {data.p_value:.3g}"
    return gettext("Pearson r = %(r)s%(p)s (n = %(n)s %(unit)s)", r=f"{data.r:.3f}", p=p, n=data.n, unit=unit)


def draw_scatter(data: Scatter) -> Drawn:
    """Fig. 4 (one labelled point per run) or human vs model (one point per item, size by participants)."""
    import matplotlib
    import numpy as np

    per_run = data.name == "keyinfo-accuracy"
    with _LOCK, matplotlib.rc_context(style()):
        figure = _figure((6.0, 4.4))
        axes = figure.add_subplot()
        tips = {}
        xs = np.array([p.x for p in data.points], dtype=float)
        ys = np.array([p.y for p in data.points], dtype=float)
        if per_run:
            at: dict[tuple[float, float], list[str]] = {}
            for i, point in enumerate(data.points):
                dot = axes.scatter([point.x], [point.y], s=36, color=_color(i, len(data.points)),
                                   marker=MARKERS[i % len(MARKERS)], zorder=3)
                dot.set_gid(f"point-{i}")
                tips[f"point-{i}"] = ("point", f"{point.label}: KeyInfo {point.x:.3f}, accuracy {point.y:.1%}, "
                                               f"n={point.n}")
                at.setdefault((round(point.x, 4), round(point.y, 4)), []).append(point.label)
            for (x, y), labels in at.items():  # runs on one spot (a built-in answers alike under every method)
                shown = [_shorten(label, 32) for label in labels[:4]] + ([f"+{len(labels) - 4} more"] if len(labels) > 4 else [])
                axes.annotate(_plain("\n".join(shown)), (x, y), textcoords="offset points", xytext=(5, 3),
                              fontsize=6, va="top" if len(shown) > 1 else "bottom")
            axes.margins(x=0.12, y=0.2)
        else:
            sizes = [12 + 6 * p.n for p in data.points]
            axes.scatter(xs, ys, s=sizes, color=COLORS[0], alpha=0.45, edgecolors="none")
            axes.plot([0, 1], [0, 1], linestyle=":", color="#5f6b7a", linewidth=1)
            axes.set_xlim(-0.03, 1.03)
            axes.set_ylim(-0.03, 1.03)
        if data.r is not None and len(xs) >= 2:
            slope, intercept = np.polyfit(xs, ys, 1)
            grid = np.linspace(xs.min(), xs.max(), 20)
            axes.plot(grid, slope * grid + intercept, color="#5f6b7a", linewidth=1, linestyle="--")
        axes.set_xlabel(_plain(data.x_label))
        axes.set_ylabel(_plain(data.y_label))
        axes.set_title(_plain(f"{data.title}\n{_r_text(data, gettext('runs') if per_run else gettext('items'))}"), loc="left")
        axes.grid(color="#eef0f3", linewidth=0.8)
        axes.set_axisbelow(True)
        _caption(figure, data.note)
    return Drawn(figure, data.title, tips)


def draw_grouped(data: Grouped) -> Drawn:
    """Accuracy per group, one series per run: bars for question types, lines for feature bins; each
    tick says how many items the group holds, each point's tooltip its n."""
    import matplotlib
    import numpy as np

    bars = data.name == "accuracy-by-question-type"
    with _LOCK, matplotlib.rc_context(style()):
        figure = _figure((7.2, 4.4))
        axes = figure.add_subplot()
        tips = {}
        positions = np.arange(len(data.groups))
        width = 0.8 / max(1, len(data.series))
        for s, series in enumerate(data.series):
            color = _color(s, len(data.series))
            values = [c.accuracy if c.accuracy is not None else np.nan for c in series.cells]
            label = _plain(_shorten(series.label, 40))
            if bars:
                artists = axes.bar(positions - 0.4 + width * (s + 0.5), values, width=width * 0.95, color=color,
                                   label=label)
            else:
                axes.plot(positions, values, marker=MARKERS[s % len(MARKERS)], color=color, label=label, linewidth=1.4)
                artists = [axes.scatter([x], [v], s=10, color=color, zorder=3) for x, v in zip(positions, values)]
            for g, (artist, cell) in enumerate(zip(artists, series.cells)):
                gid = f"cell-{s}-{g}"
                artist.set_gid(gid)
                value = "—" if cell.accuracy is None else f"{cell.accuracy:.1%}"
                tips[gid] = ("cell", f"{series.label}, {cell.group}: {value} ({cell.correct}/{cell.n})")
        axes.set_xticks(positions, [f"{_plain(g)}\nn={n}" for g, n in zip(data.groups, data.items_per_group)])
        axes.set_ylim(0, 1.02)
        axes.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
        axes.set_xlabel(_plain(data.x_label))
        axes.set_ylabel(gettext("accuracy"))
        axes.set_title(_plain(data.title), loc="left")
        axes.grid(axis="y", color="#eef0f3", linewidth=0.8)
        axes.set_axisbelow(True)
        if data.series:
            axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        _caption(figure, data.note)
    return Drawn(figure, data.title, tips)


def draw(data: Scatter | Grouped) -> Drawn:
    return draw_scatter(data) if isinstance(data, Scatter) else draw_grouped(data)
