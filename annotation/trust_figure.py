"""The trust page's figures as inline SVG, drawn on the server with matplotlib (no CDN, no
JavaScript): the reliability diagram with the count of each bin, and the coverage/agreement
curve. Takes the plain data of `annotation.trust`; no Django. matplotlib is imported by the functions
that draw, not with the module (the pages import it at URL loading).
"""
from __future__ import annotations

import functools
import io
import re
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from foundation.words import gettext

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SIZE = (4.6, 3.4)
#: Fonts for Chinese labels, the first installed one is used (Debian: fonts-noto-cjk, fonts-droid-fallback,
#: fonts-wqy-zenhei); matplotlib's own DejaVu Sans draws Latin text and falls back to it glyph by glyph.
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Droid Sans Fallback", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei")


@functools.lru_cache(maxsize=1)
def fonts() -> dict:
    """rcParams naming the fonts of the labels: DejaVu Sans, then the CJK fonts this machine has (named families,
    not the generic sans-serif: matplotlib falls back glyph by glyph only along the families named)."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    if not installed.intersection(CJK_FONTS) and _add_fonts_installed_since_the_cache(font_manager):
        installed = {font.name for font in font_manager.fontManager.ttflist}
    return {"font.family": ["DejaVu Sans", *(name for name in CJK_FONTS if name in installed)]}


def _add_fonts_installed_since_the_cache(font_manager) -> int:
    """matplotlib lists the machine's fonts once, in a cache kept across processes (~/.cache/matplotlib): a CJK
    font installed after that is not in its list. Add the system's font files that look like one (their names),
    once per process; returns how many."""
    known = {font.fname for font in font_manager.fontManager.ttflist}
    added = 0
    for path in font_manager.findSystemFonts():
        name = path.rsplit("/", 1)[-1].lower()
        if path not in known and any(mark in name for mark in ("cjk", "droidsansfallback", "wqy")):
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a file FreeType cannot read
                continue
            added += 1
    return added


BAR = "#4c78a8"
LINE = "#888888"


SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)


def _presentation_attributes(root: ET.Element) -> None:
    """Style attributes and the style sheet become SVG presentation attributes, so the page's
    Content-Security-Policy needs no inline styles for the figure."""
    for parent in root.iter():
        for child in list(parent):
            if child.tag in (f"{{{SVG_NS}}}style", f"{{{SVG_NS}}}metadata"):
                parent.remove(child)
    root.set("stroke-linejoin", "round")  # matplotlib's sheet: *{stroke-linejoin: round; stroke-linecap: butt}
    root.set("stroke-linecap", "butt")
    for element in root.iter():
        declarations = element.attrib.pop("style", "")
        for declaration in declarations.split(";"):
            name, _, value = declaration.partition(":")
            if name.strip() and value.strip():
                element.set(name.strip(), value.strip())


def _prefix_ids(root: ET.Element, prefix: str) -> None:
    """Ids unique on a page with two figures (references follow)."""
    for element in root.iter():
        if "id" in element.attrib:
            element.set("id", f"{prefix}-{element.get('id')}")
    for element in root.iter():
        for name, value in list(element.attrib.items()):
            if "url(#" in value:
                element.set(name, value.replace("url(#", f"url(#{prefix}-"))
            elif name.endswith("href") and value.startswith("#"):
                element.set(name, f"#{prefix}-{value[1:]}")


def _svg(figure: Figure, label: str) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    root = ET.fromstring(buffer.getvalue().encode())
    _presentation_attributes(root)
    _prefix_ids(root, re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-"))
    # The inline SVG scales with its card: no fixed size, the viewBox stays.
    root.attrib.pop("width", None)
    root.attrib.pop("height", None)
    root.set("class", "figure")
    root.set("role", "img")
    root.set("aria-label", label)
    return ET.tostring(root, encoding="unicode")


def reliability_svg(bins: list[dict], *, title: str = "Reliability") -> str:
    """Bars: agreement with people per belief bin; the diagonal is perfect calibration; the
    number over each bar is its count of reviews."""
    # A bare Figure (not pyplot) draws without any display or global backend state.
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(fonts()):
        return _reliability(Figure(figsize=SIZE), bins, title)


def _reliability(figure: Figure, bins: list[dict], title: str) -> str:
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
    axes.set_xlabel(gettext("judge's belief"))
    axes.set_ylabel(gettext("agreement with people"))
    axes.set_title(title, fontsize=10)
    return _svg(figure, title)


def coverage_svg(curve: list[dict], *, threshold: float | None = None) -> str:
    """Coverage (share of labels with belief >= t) and agreement above t, against t."""
    # A bare Figure (not pyplot) draws without any display or global backend state.
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(fonts()):
        return _coverage(Figure(figsize=SIZE), curve, threshold)


def _coverage(figure: Figure, curve: list[dict], threshold: float | None) -> str:
    axes = figure.add_subplot()
    xs = [p["threshold"] for p in curve]
    axes.plot(xs, [p["coverage"] if p["coverage"] is not None else float("nan") for p in curve],
              label=gettext("coverage"), color=LINE)
    axes.plot(xs, [p["agreement"] if p["agreement"] is not None else float("nan") for p in curve],
              label=gettext("agreement above t"), color=BAR, marker="o", markersize=3)
    if threshold is not None:
        axes.axvline(threshold, color="black", linestyle=":", linewidth=1)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.05)
    axes.set_xlabel(gettext("threshold t on the judge's belief"))
    axes.legend(fontsize=7, loc="lower left")
    title = gettext("Coverage and agreement")
    axes.set_title(title, fontsize=10)
    return _svg(figure, title)
