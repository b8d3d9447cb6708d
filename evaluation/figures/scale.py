"""The one-scale figure drawn on the server (matplotlib, like evaluation.figures.drawing): people's abilities as a
histogram above the models' abilities, each model a point with its 95% interval on the same x axis, and the
items' difficulties as a rug under the histogram. Plain data in, no Django."""
from __future__ import annotations

from collections.abc import Sequence

from evaluation.figures.drawing import _LOCK, COLORS, Drawn, _figure, _plain, _shorten, style
from foundation.words import gettext

#: At most this many models get a row of their own (the best and the worst kept, the middle elided).
MAX_MODEL_ROWS = 40


def draw_scale(people: Sequence[float], models: Sequence[tuple[str, float, float, float]],
               difficulties: Sequence[float], *, title: str, note: str = "") -> Drawn:
    """``people``: abilities; ``models``: (label, ability, low, high), drawn in the given order;
    ``difficulties``: item difficulties on the same scale."""
    import matplotlib
    import numpy as np

    models = list(models)
    if len(models) > MAX_MODEL_ROWS:
        half = MAX_MODEL_ROWS // 2
        models = models[:half] + models[-half:]
    values = [*people, *difficulties, *(m[2] for m in models), *(m[3] for m in models)]
    low, high = (min(values) - 0.3, max(values) + 0.3) if values else (-3.0, 3.0)
    with _LOCK, matplotlib.rc_context(style()):
        rows = max(1, len(models))
        figure = _figure((7.2, 2.6 + 0.24 * rows))
        grid = figure.add_gridspec(2, 1, height_ratios=[2.2, max(1.0, 0.24 * rows)], hspace=0.08)
        top = figure.add_subplot(grid[0])
        bottom = figure.add_subplot(grid[1], sharex=top)
        tips = {}
        if people:
            top.hist(people, bins=min(30, max(8, len(people) // 4)), range=(low, high), color=COLORS[0], alpha=0.75,
                     edgecolor="white", linewidth=0.6, label=gettext("people (n = %(n)s)", n=len(people)))
        else:
            top.text(0.5, 0.6, gettext("no study answers on these items"), transform=top.transAxes, ha="center",
                     color="#5f6b7a")
        if len(difficulties):
            rug = top.plot(difficulties, np.zeros(len(difficulties)), "|", color="#5f6b7a", markersize=9, alpha=0.5,
                           label=gettext("item difficulties (%(n)s)", n=len(difficulties)))[0]
            rug.set_gid("items")
            tips["items"] = ("rug", gettext("%(n)s item difficulties", n=len(difficulties)))
        top.set_ylabel(gettext("people (count)"))
        top.legend(fontsize=7, loc="upper left", frameon=False)
        top.tick_params(labelbottom=False)
        top.set_title(_plain(title), loc="left")
        for y, (label, ability, lo, hi) in enumerate(models):
            gid = f"model-{y}"
            dot = bottom.errorbar([ability], [y], xerr=[[ability - lo], [hi - ability]], fmt="o",
                                  color=COLORS[1], ecolor=COLORS[1], markersize=4, capsize=2)
            dot.lines[0].set_gid(gid)
            tips[gid] = ("model", gettext("%(model)s: ability %(ability)s [%(low)s, %(high)s]", model=label,
                                          ability=f"{ability:.2f}", low=f"{lo:.2f}", high=f"{hi:.2f}"))
        bottom.set_yticks(range(len(models)), [_plain(_shorten(m[0], 44)) for m in models])
        bottom.set_ylim(len(models) - 0.5 if models else 0.5, -0.5)
        bottom.set_xlim(low, high)
        bottom.set_xlabel(gettext("ability (people and models) / difficulty (items), one logit scale"))
        bottom.grid(axis="x", color="#eef0f3", linewidth=0.8)
        bottom.set_axisbelow(True)
        if not models:
            bottom.text(0.5, 0.5, gettext("no model runs"), transform=bottom.transAxes, ha="center", color="#5f6b7a")
        if note:
            figure.text(0.01, -0.02, _plain(note), fontsize=7, color="#5f6b7a", va="top", wrap=True)
    return Drawn(figure, title, tips)
