"""The pairwise matrix of a leaderboard drawn on the server (matplotlib, like evaluation.figures.drawing): one row
and one column per respondent (humans first when present, then the cells), each square coloured by the accuracy
difference row - column on the pairs both have, outlined and starred where the corrected p is below alpha, with
the corrected p written in it while the matrix is small enough to read. Plain data in, no Django."""
from __future__ import annotations

from collections.abc import Sequence

from evaluation.figures.drawing import _LOCK, Drawn, _figure, _plain, _shorten, style
from foundation.words import gettext

#: Up to this many rows the corrected p is written in each square; beyond, only the colour and the star.
ANNOTATE_MAX = 14


def draw_matrix(labels: Sequence[str], difference: Sequence[Sequence[float | None]],
                p_adjusted: Sequence[Sequence[float | None]], *, title: str, alpha: float = 0.05,
                note: str = "") -> Drawn:
    """``difference[i][j]``: accuracy of row i minus column j on their common items (None: no test);
    ``p_adjusted[i][j]``: the corrected p of the pair."""
    import matplotlib
    import numpy as np
    from matplotlib.patches import Rectangle

    size = len(labels)
    values = np.array([[np.nan if v is None else v for v in row] for row in difference], dtype=float).reshape(
        size, size)
    limit = max(0.05, float(np.nanmax(np.abs(values)))) if np.isfinite(values).any() else 1.0
    with _LOCK, matplotlib.rc_context(style()):
        side = min(14.0, 2.6 + 0.42 * size)
        figure = _figure((side + 1.2, side))
        axes = figure.add_subplot()
        image = axes.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=-limit, vmax=limit)
        colorbar = figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
        colorbar.set_label(gettext("accuracy, row - column (on common items)"))
        tips = {}
        for i in range(size):
            for j in range(size):
                if i == j or np.isnan(values[i, j]):
                    continue
                p = p_adjusted[i][j]
                star = p is not None and p < alpha
                gid = f"pair-{i}-{j}"
                square = Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                                      edgecolor="#1d2330" if star else "none", linewidth=1.2)
                square.set_gid(gid)
                axes.add_patch(square)
                p_text = "—" if p is None else f"{p:.3g}"
                tips[gid] = ("pair", f"{labels[i]} vs {labels[j]}: difference {values[i, j]:+.1%}, "
                                     f"corrected p {p_text}")
                if size <= ANNOTATE_MAX:
                    text = ("*" if star else "") + ("—" if p is None else f"{p:.2g}")
                    axes.text(j, i, text, ha="center", va="center", fontsize=6,
                              color="white" if abs(values[i, j]) > 0.6 * limit else "#1d2330")
                elif star:
                    axes.text(j, i, "*", ha="center", va="center", fontsize=7, color="#1d2330")
        names = [_plain(_shorten(label, 34)) for label in labels]
        axes.set_xticks(range(size), names, rotation=60, ha="right")
        axes.set_yticks(range(size), names)
        axes.set_title(_plain(title), loc="left")
        for spine in axes.spines.values():
            spine.set_visible(False)
        if note:  # under the column names, however long they are
            axes.set_xlabel(_plain(note), fontsize=7, color="#5f6b7a", loc="left")
    return Drawn(figure, title, tips)
