"""annotation.trust_figure.fonts: the CJK font of Chinese labels is found even when matplotlib's cached font list
was made before the font was installed."""
from __future__ import annotations

import io
import warnings

import matplotlib
import pytest
from matplotlib import font_manager
from matplotlib.figure import Figure

from annotation import trust_figure


@pytest.fixture
def font_list_without_cjk():
    """matplotlib's font list as a cache made before the CJK fonts were installed: the same list without them."""
    manager = font_manager.fontManager
    kept = list(manager.ttflist)
    manager.ttflist = [f for f in kept if not any(mark in f.fname.lower() for mark in ("cjk", "droidsansfallback",
                                                                                      "wqy"))]
    trust_figure.fonts.cache_clear()
    yield
    manager.ttflist = kept
    trust_figure.fonts.cache_clear()


def test_a_cjk_font_missing_from_the_cached_list_is_found_on_the_machine(font_list_without_cjk):
    system = [p for p in font_manager.findSystemFonts() if "cjk" in p.lower() or "wqy" in p.lower()
              or "droidsansfallback" in p.lower()]
    assert system, "no CJK font on this machine (apt-get install fonts-noto-cjk)"
    assert not set(trust_figure.CJK_FONTS) & {f.name for f in font_manager.fontManager.ttflist}
    family = trust_figure.fonts()["font.family"]
    assert family[0] == "DejaVu Sans" and set(family[1:]) and set(family[1:]) <= set(trust_figure.CJK_FONTS)
    # Drawn with it: every glyph of a Chinese label is found (matplotlib warns of a missing one).
    with warnings.catch_warnings(), matplotlib.rc_context(trust_figure.fonts()):
        warnings.filterwarnings("error", message=r"Glyph \d+ .* missing from")
        figure = Figure()
        figure.add_subplot().set_title("可信度 与 覆盖率")
        figure.savefig(io.BytesIO(), format="png")


def test_with_a_cjk_font_in_the_list_nothing_is_scanned(monkeypatch):
    trust_figure.fonts.cache_clear()
    if not set(trust_figure.CJK_FONTS) & {f.name for f in font_manager.fontManager.ttflist}:
        trust_figure.fonts()  # adds them (a cache older than the font)
        trust_figure.fonts.cache_clear()
    scanned = []
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *a, **k: scanned.append(1) or [])
    assert len(trust_figure.fonts()["font.family"]) > 1 and not scanned
    trust_figure.fonts.cache_clear()
