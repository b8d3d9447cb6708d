"""The expected calibration error of the judge's beliefs, debiased, with an interval valid at every true ECE, 0
included (pure, no Django; the plug-in and the reliability bins are in `annotation.trust`).

numpy and scipy are imported inside the functions that use them.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from annotation.trust import CONFIDENCE, DEFAULT_BINS, Estimate, _weights, bin_index, too_few

if TYPE_CHECKING:
    import numpy as np


#: Draws of the calibration error's interval (the quantile of the plug-in's largest possible error).
ECE_DRAWS = 4000


def _bins(codes: np.ndarray, w: np.ndarray, x: np.ndarray, p: np.ndarray, bins: int):
    """Per bin: its weight s0, its gap d (agreement - belief, Hajek), the variance of d from the reviews (0 with
    one review) and the variance the beliefs imply for it (what a calibrated judge's reviews would have)."""
    import numpy as np

    def total(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(codes, weights=values, minlength=bins)

    count, s0, s1 = total(None), total(w), total(w * x)
    q0, q1, q2 = total(w * w), total(w * w * x), total(w * w * x * x)
    model = total(w * w * p * (1 - p))
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(s0 > 0, s1 / s0, 0.0)
        spread = np.clip(q2 - 2 * d * q1 + d * d * q0, 0.0, None) * np.where(count > 1, count / (count - 1), 0.0)
        square = np.where(s0 > 0, s0 * s0, 1.0)
        return s0, d, np.where(count > 1, spread, model) / square, model / square, square / np.where(q0 > 0, q0, 1.0)


def _debiased(s0: np.ndarray, d: np.ndarray, variance: np.ndarray) -> float:
    """Each bin's |gap| corrected by the bias a normal error of the bin's variance gives it, 2|d| - E|N(d, s^2)|,
    summed with the bins' weights."""
    import numpy as np
    from scipy.stats import norm

    sd = np.sqrt(variance)
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(sd > 0, sd, 1.0)
        expected = np.where(sd > 0, sd * np.sqrt(2 / np.pi) * np.exp(-d * d / (2 * safe * safe))
                            + d * (1 - 2 * norm.cdf(-d / safe)), np.abs(d))
    return float(((s0 / s0.sum()) * (2 * np.abs(d) - expected)).sum())


def calibration_error(beliefs: Sequence[float], agree: Sequence[bool], weights: Sequence[float] | None = None,
                      bins: int = DEFAULT_BINS, *, groups: Sequence[Hashable] | None = None, min_n: int = 1,
                      rounds: int = ECE_DRAWS, seed: int = 0) -> Estimate:
    """The expected calibration error, debiased, with a 95% interval (None below ``min_n`` labels).

    The plug-in ECE (``expected_calibration_error``) is biased upward: each bin's |agreement - mean belief| is
    the absolute value of a noisy gap (a perfectly calibrated judge scores 0.1 from 200 reviews). Here each bin's
    |gap| is corrected by the bias it would have if the gap were the one observed, its sampling error normal
    with the bin's (weighted, Hajek) variance: 2|d| - E|N(d, s^2)| (Kumar, Liang and Ma, "Verified uncertainty
    calibration", NeurIPS 2019: the debiased estimator); a bin of one review takes the variance its belief
    implies. The estimate is clipped at 0.

    The interval: the plug-in is off the true ECE by at most D = sum_b share_b |d_b - gap_b| (the triangle
    inequality, bin by bin), so the plug-in plus or minus the 95% quantile of D holds the true ECE at least 95% of
    the time, at every true ECE, 0 included (a percentile bootstrap of the clipped estimate missed a calibrated
    judge's 0 in most rounds). D's quantile is drawn (seeded, ``rounds`` draws) from normal errors of each bin's
    variance, never taken below what the bin's beliefs imply nor below Agresti and Coull's variance of its
    agreement (z^2 pseudo-reviews): a bin whose reviews all agree keeps an interval (it collapsed to [x, x]).
    """
    import numpy as np

    if len(beliefs) != len(agree):
        raise ValueError("one agreement per belief")
    w = _weights(weights, len(beliefs))
    p = np.asarray(beliefs, dtype=float)
    a = np.asarray(agree, dtype=float)
    if groups is not None:  # one unit per label: its summed weight, its weighted share of agreeing reviews
        if len(groups) != len(w):
            raise ValueError("one group per review")
        index: dict[Hashable, int] = {}
        codes = np.asarray([index.setdefault(g, len(index)) for g in groups], dtype=int)
        label_w = np.bincount(codes, weights=w, minlength=len(index))
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(label_w > 0, np.bincount(codes, weights=w * a, minlength=len(index)) / label_w, 0.0)
            p = np.bincount(codes, weights=w * p, minlength=len(index)) / np.where(label_w > 0, label_w, 1.0)
        first = {}
        for i, g in enumerate(codes):
            first.setdefault(int(g), float(beliefs[i]))
        p = np.where(label_w > 0, p, [first[i] for i in range(len(index))])
        w = label_w
    n = len(w)
    total = float(w.sum())
    n_eff = total ** 2 / float((w * w).sum()) if total > 0 else 0.0
    if weights is None:
        n_eff = float(n)
    missing = too_few(n, n_eff, max(1, min_n), weights is not None)
    if missing:
        return Estimate(None, None, None, n, n_eff, missing)
    binned = np.array([bin_index(float(b), bins) for b in p])
    s0, d, variance, implied, effective = _bins(binned, w, a - p, p, bins)
    value = max(0.0, _debiased(s0, d, variance))
    share = s0 / s0.sum()
    z2 = float(norm_quantile(CONFIDENCE)) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.clip(d + np.bincount(binned, weights=w * p, minlength=bins) / np.where(s0 > 0, s0, 1.0), 0, 1)
        centre = (effective * agreement + z2 / 2) / (effective + z2)
    floor = np.maximum(variance, np.maximum(implied, centre * (1 - centre) / (effective + z2)))
    noise = np.abs(np.random.default_rng(seed).standard_normal((rounds, bins))) * np.sqrt(np.where(s0 > 0, floor, 0.0))
    reach = float(np.quantile(noise @ share, CONFIDENCE))
    plugin = float((share * np.abs(d)).sum())
    return Estimate(value, max(0.0, min(plugin - reach, value)), min(1.0, max(plugin + reach, value)), n, n_eff)


def norm_quantile(confidence: float) -> float:
    """The normal quantile of a two-sided interval at ``confidence``."""
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))
