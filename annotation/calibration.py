"""The expected calibration error of the judge's beliefs, debiased, with a bootstrap interval that respects the
review design (pure, no Django; the plug-in and the reliability bins are in `annotation.trust`).

numpy and scipy are imported inside the functions that use them.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from annotation.trust import CONFIDENCE, DEFAULT_BINS, Estimate, _weights, bin_index, too_few

if TYPE_CHECKING:
    import numpy as np


#: Bootstrap resamples of the calibration error's interval.
ECE_BOOTSTRAP_ROUNDS = 400


def _ece_replicates(codes: np.ndarray, w: np.ndarray, x: np.ndarray, p: np.ndarray, replicates: int,
                    bins: int) -> np.ndarray:
    """The debiased ECE of each replicate: ``codes`` (replicate * bins + bin), the weights ``w``, the gaps
    x = agreement - belief and the beliefs ``p`` of the replicates' reviews, flattened alike."""
    import numpy as np
    from scipy.stats import norm

    size = replicates * bins

    def total(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(codes, weights=values, minlength=size).reshape(replicates, bins)

    count, s0, s1 = total(None), total(w), total(w * x)
    q0, q1, q2 = total(w * w), total(w * w * x), total(w * w * x * x)
    model = total(w * w * p * (1 - p))  # a bin of one review: the variance its belief implies
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(s0 > 0, s1 / s0, 0.0)
        spread = np.clip(q2 - 2 * d * q1 + d * d * q0, 0.0, None) * np.where(count > 1, count / (count - 1), 0.0)
        variance = np.where(count > 1, spread, model) / np.where(s0 > 0, s0 * s0, 1.0)
        sd = np.sqrt(variance)
        # E|N(d, sd^2)|: what |gap| comes out at on average when the gap is d; the bias is that minus |d|.
        expected = np.where(sd > 0, sd * np.sqrt(2 / np.pi) * np.exp(-d * d / np.where(sd > 0, 2 * sd * sd, 1.0))
                            + d * (1 - 2 * norm.cdf(-d / np.where(sd > 0, sd, 1.0))), np.abs(d))
    corrected = 2 * np.abs(d) - expected
    share = s0 / np.where(s0.sum(axis=1, keepdims=True) > 0, s0.sum(axis=1, keepdims=True), 1.0)
    return (share * corrected).sum(axis=1)


def calibration_error(beliefs: Sequence[float], agree: Sequence[bool], weights: Sequence[float] | None = None,
                      bins: int = DEFAULT_BINS, *, groups: Sequence[Hashable] | None = None, min_n: int = 1,
                      rounds: int = ECE_BOOTSTRAP_ROUNDS, seed: int = 0) -> Estimate:
    """The expected calibration error, debiased, with a 95% bootstrap interval (None below ``min_n`` labels).

    The plug-in ECE (``expected_calibration_error``) is biased upward: each bin's |agreement - mean belief| is
    the absolute value of a noisy gap (a perfectly calibrated judge scores 0.1 from 200 reviews). Here each bin's
    |gap| is corrected by the bias it would have if the gap were the one observed, its sampling error normal
    with the bin's (weighted, Hajek) variance: 2|d| - E|N(d, s^2)| (Kumar, Liang and Ma, "Verified uncertainty
    calibration", NeurIPS 2019: the debiased estimator); a bin of one review takes the variance its belief
    implies. The estimate is clipped at 0.

    The interval is the percentile bootstrap of the same estimator, resampling labels within each stratum of
    equal weight (the review design: labels certain to be reviewed, and each uniform-sample rate), each keeping
    its inverse-probability weight; with k reviewers a label is resampled whole. Seeded: the same reviews give
    the same interval.
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
    x = a - p
    value = float(_ece_replicates(binned, w, x, p, 1, bins)[0])
    rng = np.random.default_rng(seed)
    strata: dict[float, list[int]] = {}
    for i, weight in enumerate(w):
        strata.setdefault(round(float(weight), 9), []).append(i)
    picks = np.concatenate([rng.choice(np.asarray(members), size=(rounds, len(members)))
                            for members in strata.values()], axis=1)
    codes = (np.arange(rounds)[:, None] * bins + binned[picks]).ravel()
    replicates = _ece_replicates(codes, w[picks].ravel(), x[picks].ravel(), p[picks].ravel(), rounds, bins)
    low, high = (float(q) for q in np.quantile(replicates, [(1 - CONFIDENCE) / 2, 1 - (1 - CONFIDENCE) / 2]))
    value = max(0.0, value)
    return Estimate(value, min(max(0.0, low), value), min(1.0, max(high, value)), n, n_eff)
