"""The figures of a judge's quality card that are not trust figures (pure, no Django): the belief's spread, the
position probe's flips, and the length bias.

Agreement with people and calibration are `annotation.trust` / `annotation.calibration` (under the review
queue's design); what is here needs no reviews, except the judge's accuracy by answer length, which takes the
reviews with their inverse-probability weights like the trust figures.

numpy and scipy are imported inside the functions that use them.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

from annotation import trust
from evaluation.statistics.paired import wilson
from foundation.words import gettext

CONFIDENCE = 0.95
#: A belief this close to 0 or 1 is "at an extreme" (it passes any accept threshold, or none).
EXTREME = 0.01
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
HISTOGRAM_BINS = 10
#: The fewest pairs a rank correlation is given from (its interval's normal approximation needs a few).
MIN_PAIRS = 10
LENGTH_BINS = 4


def belief_spread(beliefs: Sequence[float], *, bins: int = HISTOGRAM_BINS) -> dict:
    """n, mean, quantiles, a histogram of ``bins`` equal-width bins over [0, 1] (the last holds 1.0) and the share
    at the extremes (belief <= 0.01 or >= 0.99) of the scored labels' beliefs."""
    import numpy as np

    b = np.asarray([float(x) for x in beliefs], dtype=float)
    counts = [0] * bins
    for value in b:
        counts[trust.bin_index(float(value), bins)] += 1
    if not len(b):
        return {"n": 0, "mean": None, "quantiles": {}, "histogram": _histogram(counts, bins),
                "extreme": 0, "extreme_share": None}
    extreme = int(((b <= EXTREME) | (b >= 1 - EXTREME)).sum())
    return {"n": int(len(b)), "mean": float(b.mean()),
            "quantiles": {f"{q:g}": float(np.quantile(b, q)) for q in QUANTILES},
            "histogram": _histogram(counts, bins), "extreme": extreme, "extreme_share": extreme / len(b)}


def _histogram(counts: list[int], bins: int) -> list[dict]:
    total = sum(counts)
    return [{"lower": i / bins, "upper": (i + 1) / bins, "count": c, "share": c / total if total else None}
            for i, c in enumerate(counts)]


@dataclass(frozen=True)
class Flips:
    """Original against permuted verdicts: n pairs, how many changed label (with the Wilson interval of the
    rate), and the mean absolute change of the judge's probability of the positive label over the n_belief
    pairs where both verdicts have a belief."""

    n: int
    flips: int
    rate: float | None
    low: float | None
    high: float | None
    n_belief: int
    mean_abs_change: float | None
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def position_flips(labels: Sequence[tuple[str, str]], shares: Sequence[tuple[float | None, float | None]]) -> Flips:
    """``labels``: (original, permuted) label of each target and aspect; ``shares``: the judge's probability of
    the positive label in each (None without a belief)."""
    n = len(labels)
    if not n:
        return Flips(0, 0, None, None, None, 0, None, gettext("no target judged with the options permuted yet"))
    flips = sum(a != b for a, b in labels)
    low, high = wilson(flips, n)
    changes = [abs(a - b) for a, b in shares if a is not None and b is not None]
    return Flips(n, flips, flips / n, low, high, len(changes), sum(changes) / len(changes) if changes else None)


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rho with its 95% interval (Fisher's z with the Bonett-Wright standard error), p-value, n."""

    rho: float | None
    low: float | None
    high: float | None
    p_value: float | None
    n: int
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def spearman(x: Sequence[float], y: Sequence[float], *, min_n: int = MIN_PAIRS) -> RankCorrelation:
    """scipy's Spearman rank correlation of x and y, with a 95% interval: tanh(atanh(rho) +- z * se),
    se = sqrt((1 + rho^2 / 2) / (n - 3)) (Bonett and Wright, Psychometrika 2000). None below ``min_n`` pairs or
    when one side is constant."""
    from scipy.stats import norm, spearmanr

    n = len(x)
    if len(y) != n:
        raise ValueError("one y per x")
    if n < max(4, min_n):
        return RankCorrelation(None, None, None, None, n, gettext("%(n)s pair(s); a rank correlation needs %(min)s")
                               % {"n": n, "min": max(4, min_n)})
    if len(set(x)) < 2 or len(set(y)) < 2:
        return RankCorrelation(None, None, None, None, n, gettext("one of the two is the same throughout"))
    result = spearmanr(x, y)
    rho, p = float(result.statistic), float(result.pvalue)
    z = norm.ppf(1 - (1 - CONFIDENCE) / 2)
    se = math.sqrt((1 + rho * rho / 2) / (n - 3))
    centre = math.atanh(max(-0.999999, min(0.999999, rho)))
    return RankCorrelation(rho, math.tanh(centre - z * se), math.tanh(centre + z * se), p, n)


def length_bins(lengths: Sequence[int], agree: Sequence[bool], weights: Sequence[float] | None = None, *,
                groups: Sequence[Hashable] | None = None, bins: int = LENGTH_BINS,
                min_n: int = trust.MIN_LABELS) -> list[dict]:
    """The judge's agreement with people by answer length: the reviews cut at the quantiles of their answers'
    lengths into ``bins`` bins (fewer when lengths repeat), each with `trust.accuracy` (weighted, n labels)."""
    import numpy as np

    if not lengths:
        return []
    edges = sorted(set(float(v) for v in np.quantile(np.asarray(lengths, dtype=float),
                                                      [i / bins for i in range(1, bins)])))
    which = [int(np.searchsorted(edges, length, side="left")) for length in lengths]
    result = []
    for b in range(len(edges) + 1):
        members = [i for i, w in enumerate(which) if w == b]
        if not members:
            continue
        estimate = trust.accuracy([agree[i] for i in members],
                                  None if weights is None else [weights[i] for i in members],
                                  groups=None if groups is None else [groups[i] for i in members], min_n=min_n)
        shown = [lengths[i] for i in members]
        result.append({"from": min(shown), "to": max(shown), "accuracy": estimate.as_dict()})
    return result
