"""How far a judge can be trusted, from people's reviews of its labels (pure, no Django).

Every figure takes parallel sequences over the reviews: the judge's label, the reviewer's
label, the judge's belief that its label is right (0..1), and optional inverse-probability
weights (1 / the chance that the label was drawn for review, see `review_order`). Without
weights every review counts once; with weights each figure is the weighted (Hajek)
estimate, and its interval uses Kish's effective sample size n_eff = (sum w)^2 / sum w^2.

* accuracy: the weighted share of reviews that agree with the judge, Wilson 95% interval
  (statsmodels `proportion_confint`);
* Cohen's kappa: scikit-learn `cohen_kappa_score` with `sample_weight`; its 95% interval
  is statsmodels' asymptotic one (`cohens_kappa`, Fleiss-Cohen-Everitt variance) on the
  table of weights scaled to n_eff reviews;
* reliability bins: B equal-width bins, a belief b falls in bin floor(b * B) (the last bin
  holds 1.0); each bin has its count, weight, mean belief and agreement;
* expected calibration error: sum over bins of (bin weight / total) * |agreement - mean belief|;
* Brier score: scikit-learn `brier_score_loss` of belief against agreement (0/1);
* coverage/agreement curve and the agreement above a threshold: of the labels with
  belief >= t, the share of all labels they cover and their agreement with people.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import norm
from sklearn.metrics import brier_score_loss, cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

CONFIDENCE = 0.95
DEFAULT_BINS = 10
#: Thresholds of the coverage/agreement curve: 0.00, 0.05, ..., 1.00.
CURVE_THRESHOLDS = tuple(round(i / 20, 2) for i in range(21))


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% interval, the number of reviews and their effective number."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    n_eff: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ReliabilityBin:
    lower: float
    upper: float
    count: int
    weight: float
    mean_belief: float | None
    agreement: float | None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    coverage: float | None
    agreement: float | None
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def _weights(weights: Sequence[float] | None, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError("one weight per review")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights must be finite and >= 0")
    return w


def effective_n(weights: Sequence[float] | None, n: int | None = None) -> float:
    """Kish's effective sample size of the weights (n itself when unweighted)."""
    if weights is None:
        return float(n or 0)
    w = np.asarray(weights, dtype=float)
    squares = float((w * w).sum())
    return float(w.sum()) ** 2 / squares if squares > 0 else 0.0


def agreement(judge: Sequence[Hashable], human: Sequence[Hashable]) -> list[bool]:
    """Whether each review agrees with the judge's label."""
    if len(judge) != len(human):
        raise ValueError("one reviewer label per judge label")
    return [a == b for a, b in zip(judge, human)]


def accuracy(agree: Sequence[bool], weights: Sequence[float] | None = None) -> Estimate:
    """Weighted share of agreeing reviews with a Wilson 95% interval on n_eff."""
    n = len(agree)
    w = _weights(weights, n)
    total = float(w.sum())
    if n == 0 or total <= 0:
        return Estimate(None, None, None, n, 0.0)
    value = float((w * np.asarray(agree, dtype=float)).sum()) / total
    n_eff = effective_n(weights, n)
    low, high = proportion_confint(value * n_eff, n_eff, alpha=1 - CONFIDENCE, method="wilson")
    return Estimate(value, float(low), float(high), n, n_eff)


def kappa(judge: Sequence[Hashable], human: Sequence[Hashable], weights: Sequence[float] | None = None,
          labels: Sequence[Hashable] | None = None) -> Estimate:
    """Cohen's kappa between judge and people with its asymptotic 95% interval.

    None when chance agreement is 1 (every label in one category on both sides).
    """
    n = len(judge)
    agreement(judge, human)  # checks the lengths
    w = _weights(weights, n)
    n_eff = effective_n(weights, n)
    categories = list(labels) if labels is not None else sorted({*judge, *human}, key=str)
    if n == 0 or float(w.sum()) <= 0:
        return Estimate(None, None, None, n, n_eff)
    position = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for a, b, weight in zip(judge, human, w):
        table[position[a], position[b]] += weight
    table = table / table.sum()
    chance = float((table.sum(1) * table.sum(0)).sum())
    if chance >= 1 - 1e-12:
        return Estimate(None, None, None, n, n_eff)
    value = float(cohen_kappa_score(list(judge), list(human), labels=categories, sample_weight=w))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = float(cohens_kappa(table * n_eff, return_results=True).std_kappa)
    if not math.isfinite(std):  # a degenerate table (e.g. one side all one label): no interval
        return Estimate(value, None, None, n, n_eff)
    half = float(norm.ppf(0.5 + CONFIDENCE / 2)) * std
    return Estimate(value, value - half, value + half, n, n_eff)


def bin_index(belief: float, bins: int = DEFAULT_BINS) -> int:
    """The reliability bin of a belief: floor(belief * bins), 1.0 in the last bin."""
    if not 0.0 <= belief <= 1.0:
        raise ValueError("a belief is between 0 and 1")
    return min(int(math.floor(round(belief * bins, 9))), bins - 1)


def reliability_bins(beliefs: Sequence[float], agree: Sequence[bool], weights: Sequence[float] | None = None,
                     bins: int = DEFAULT_BINS) -> list[ReliabilityBin]:
    """Equal-width reliability bins with count, weight, mean belief and agreement each."""
    if len(beliefs) != len(agree):
        raise ValueError("one agreement per belief")
    w = _weights(weights, len(beliefs))
    counts = [0] * bins
    weight = [0.0] * bins
    belief_sum = [0.0] * bins
    agree_sum = [0.0] * bins
    for b, a, wi in zip(beliefs, agree, w):
        i = bin_index(float(b), bins)
        counts[i] += 1
        weight[i] += wi
        belief_sum[i] += wi * float(b)
        agree_sum[i] += wi * float(bool(a))
    return [
        ReliabilityBin(
            lower=i / bins, upper=(i + 1) / bins, count=counts[i], weight=weight[i],
            mean_belief=belief_sum[i] / weight[i] if weight[i] > 0 else None,
            agreement=agree_sum[i] / weight[i] if weight[i] > 0 else None,
        )
        for i in range(bins)
    ]


def expected_calibration_error(beliefs: Sequence[float], agree: Sequence[bool],
                               weights: Sequence[float] | None = None, bins: int = DEFAULT_BINS) -> float | None:
    """Weighted mean over bins of |agreement - mean belief| (None without reviews)."""
    table = reliability_bins(beliefs, agree, weights, bins)
    total = sum(b.weight for b in table)
    if total <= 0:
        return None
    return sum(b.weight / total * abs(b.agreement - b.mean_belief) for b in table if b.weight > 0)


def brier_score(beliefs: Sequence[float], agree: Sequence[bool],
                weights: Sequence[float] | None = None) -> float | None:
    """Mean squared difference between belief and agreement (0 or 1)."""
    if len(beliefs) != len(agree):
        raise ValueError("one agreement per belief")
    if not beliefs:
        return None
    w = _weights(weights, len(beliefs))
    if float(w.sum()) <= 0:
        return None
    outcome = np.asarray(agree, dtype=int)
    return float(brier_score_loss(outcome, np.asarray(beliefs, dtype=float), sample_weight=w,
                                  pos_label=1, labels=[0, 1]))


def _coverage(threshold: float, population: Sequence[float] | None, beliefs: Sequence[float],
              w: np.ndarray) -> float | None:
    if population is not None:
        return sum(b >= threshold for b in population) / len(population) if len(population) else None
    total = float(w.sum())
    return float(w[np.asarray(beliefs, dtype=float) >= threshold].sum()) / total if total > 0 else None


def above_threshold(beliefs: Sequence[float], agree: Sequence[bool], threshold: float,
                    weights: Sequence[float] | None = None,
                    population: Sequence[float] | None = None) -> tuple[Estimate, float | None]:
    """Agreement (with its interval) of the reviewed labels whose belief >= threshold, and
    the share of labels at or above it: of `population` (every label's belief) when given,
    else estimated from the weighted reviews."""
    w = _weights(weights, len(beliefs))
    keep = np.asarray(beliefs, dtype=float) >= threshold if len(beliefs) else np.zeros(0, dtype=bool)
    kept_agree = [a for a, k in zip(agree, keep) if k]
    kept_weights = None if weights is None else [float(x) for x, k in zip(w, keep) if k]
    return accuracy(kept_agree, kept_weights), _coverage(threshold, population, beliefs, w)


def coverage_curve(beliefs: Sequence[float], agree: Sequence[bool], weights: Sequence[float] | None = None,
                   population: Sequence[float] | None = None,
                   thresholds: Sequence[float] = CURVE_THRESHOLDS) -> list[CurvePoint]:
    """For each threshold t: the share of labels with belief >= t and their agreement."""
    points = []
    for t in thresholds:
        estimate, coverage = above_threshold(beliefs, agree, t, weights, population)
        points.append(CurvePoint(threshold=float(t), coverage=coverage, agreement=estimate.value, n=estimate.n))
    return points


def trust_figures(judge: Sequence[Hashable], human: Sequence[Hashable], beliefs: Sequence[float],
                  weights: Sequence[float] | None = None, *, threshold: float | None = None,
                  population: Sequence[float] | None = None, labels: Sequence[Hashable] | None = None,
                  bins: int = DEFAULT_BINS) -> dict:
    """Every trust figure of one set of reviews, as plain data."""
    agree = agreement(judge, human)
    figures = {
        "n": len(agree),
        "n_eff": effective_n(weights, len(agree)),
        "accuracy": accuracy(agree, weights).as_dict(),
        "kappa": kappa(judge, human, weights, labels).as_dict(),
        "ece": expected_calibration_error(beliefs, agree, weights, bins),
        "brier": brier_score(beliefs, agree, weights),
        "bins": [b.as_dict() for b in reliability_bins(beliefs, agree, weights, bins)],
        "curve": [p.as_dict() for p in coverage_curve(beliefs, agree, weights, population)],
        "threshold": threshold,
        "above_threshold": None,
        "coverage_above_threshold": None,
    }
    if threshold is not None:
        estimate, coverage = above_threshold(beliefs, agree, threshold, weights, population)
        figures["above_threshold"] = estimate.as_dict()
        figures["coverage_above_threshold"] = coverage
    return figures
