"""Judge-powered estimates: prediction-powered inference (PPI++) for a mean under the review queue's design
(pure, no Django).

The quantity is a share over a set of targets (a free-text run's accuracy: the share of its results people
would call correct; the share of items kept at screening; the share of clue-graph drafts accepted as they
are). The judge has a prediction f_i in [0, 1] for every target (its belief in the positive label when it gave
it, one minus its belief when it gave the other of two); people reviewed some targets, Y_i in [0, 1] (the share
of a target's reviews giving the positive label). Prediction-powered inference (Angelopoulos, Bates, Fannjiang,
Jordan and Zrnic, "Prediction-powered inference", Science 2023) estimates the mean of Y from the mean of f over
every target plus a rectifier, the reviews' mean of Y - f; PPI++ (Angelopoulos, Duchi and Zrnic, "PPI++:
efficient prediction-powered inference", 2023) scales f by a power-tuning lambda in [0, 1] chosen to make the
interval narrowest (lambda = 0 is people only; lambda = 1 plain PPI).

What the PPI libraries lack is the queue's design: reviews are not a uniform sample but triage (the least
believed labels first, each of them certain to be reviewed: inclusion probability 1) plus a uniform share
(inclusion probability u*), see `review_order`. Here the rectifier is the Hajek estimate over the reviewed
targets, each weighted by one over its inclusion probability:

    theta = lambda * mean_all(f) + sum_S w_i (Y_i - lambda f_i) / sum_S w_i,        w_i = 1 / pi_i,

and its variance the linearised Poisson-sampling (design) variance of that ratio,

    V = sum_S (1 - pi_i) / pi_i^2 * e_i^2 / (sum_S w_i)^2 * m / (m - 1),   e_i = Y_i - lambda f_i - rectifier,

m the reviewed targets that were not certain to be (targets certain to be reviewed add no sampling error).
Lambda minimises V (a regression of Y on f among the targets not certain to be reviewed, clipped to [0, 1]);
with lambda tuned on the reviews, V is scaled by m / (m - 2) and the quantile is Student's t with m - 2 degrees
of freedom (m - 1 and m / (m - 1) with lambda fixed). The estimand is the share over these
targets (the run's accuracy on its results): the judge's mean over all of them is known exactly, and only the
reviews are a sample. The interval is clipped to [0, 1]. With every pi equal (a uniform sample)
and few targets reviewed, it is ppi_py's `ppi_mean_ci` (tested against it).

Refused, with a reason, when some target had no chance of review (pi = 0: no uniform sample), or when fewer
than `min_uniform` reviewed targets came from the uniform share (the variance rests on them).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from foundation.words import gettext

CONFIDENCE = 0.95
#: The fewest reviewed targets from the uniform share (pi < 1) an estimate is given from.
MIN_UNIFORM = 10


@dataclass(frozen=True)
class PoweredEstimate:
    """An estimate of a share with its 95% interval: n targets, n_reviewed of them reviewed (n_uniform of those
    from the uniform share), lam the weight of the judge's predictions (0: people only)."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    n_reviewed: int
    n_uniform: int
    lam: float | None
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def half_width(self) -> float | None:
        return None if self.low is None else (self.high - self.low) / 2


def _quantile(confidence: float, df: int) -> float:
    """Student's t quantile of a two-sided interval (the normal one without degrees of freedom)."""
    from scipy.stats import norm, t

    return float(t.ppf(0.5 + confidence / 2, df)) if df >= 1 else float(norm.ppf(0.5 + confidence / 2))


def _variance(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


def powered_mean(predictions: Sequence[float | None], observed: Sequence[float | None],
                 inclusion: Sequence[float], *, lam: float | None = None, confidence: float = CONFIDENCE,
                 min_uniform: int = MIN_UNIFORM) -> PoweredEstimate:
    """The prediction-powered (PPI++) estimate of the mean of Y over every target, with its interval.

    Per target, in the same order: the judge's prediction f (None: no prediction, e.g. an unreadable reply; it
    then predicts the mean of the others), the people's Y (None: not reviewed) and the target's inclusion
    probability pi. ``lam``: fixed power tuning (None: the one giving the narrowest interval; 0: people only).
    """
    if not len(predictions) == len(observed) == len(inclusion):
        raise ValueError("one prediction, observation and inclusion probability per target")
    n = len(predictions)
    given = [float(f) for f in predictions if f is not None]
    fill = sum(given) / len(given) if given else 0.0
    f_all = [fill if f is None else float(f) for f in predictions]
    sample = [(f, float(y), float(p)) for f, y, p in zip(f_all, observed, inclusion) if y is not None]
    n_reviewed = len(sample)
    n_uniform = sum(1 for _, _, p in sample if p < 1)
    if any(p < 0 or p > 1 or not math.isfinite(p) for p in inclusion):
        raise ValueError("inclusion probabilities are in [0, 1]")
    if any(p <= 0 for _, _, p in sample):
        raise ValueError("a reviewed target has inclusion probability 0")

    def refused(reason: str) -> PoweredEstimate:
        return PoweredEstimate(None, None, None, n, n_reviewed, n_uniform, None, reason)

    if n == 0:
        return refused(gettext("no target"))
    unreachable = sum(1 for y, p in zip(observed, inclusion) if y is None and p <= 0)
    if unreachable:
        return refused(gettext("%(n)s target(s) had no chance of review (nothing drawn at random since they were "
                               "added): no unbiased estimate", n=unreachable))
    unreviewed = n - n_reviewed
    if unreviewed and n_uniform < min_uniform:
        return refused(gettext("%(n)s reviewed target(s) were not certain to be reviewed (drawn at random beyond the "
                               "triage order); the estimate rests on them and needs at least %(min)s",
                               n=n_uniform, min=min_uniform))
    weights = [1 / p for _, _, p in sample]
    total = sum(weights)
    f_mean = sum(w * f for w, (f, _, _) in zip(weights, sample)) / total
    y_mean = sum(w * y for w, (_, y, _) in zip(weights, sample)) / total
    cost = [(1 - p) / (p * p) for _, _, p in sample]  # each reviewed target's share of the design variance
    tuned = lam is None
    if tuned:
        # The regression of Y on f among the targets that were not certain to be reviewed: their covariance from
        # the reviews, the spread of f from every such target (known exactly; less overfit than the reviews').
        uncertain = [f for f, p in zip(f_all, inclusion) if p < 1]
        spread = _variance(uncertain)
        together = sum(c * (f - f_mean) * (y - y_mean) for c, (f, y, _) in zip(cost, sample))
        together /= max(sum(cost), 1e-300)
        lam = min(1.0, max(0.0, together / spread)) if spread > 0 and sum(cost) > 0 else 1.0
    rectifier = sum(w * (y - lam * f) for w, (f, y, _) in zip(weights, sample)) / total
    value = lam * sum(f_all) / n + rectifier
    # Two quantities are estimated from the m reviews of the uniform share (the rectifier and lambda): the residual
    # variance is scaled by m / (m - 2) and the quantile is Student's t with m - 2 degrees of freedom, as for a
    # regression (lambda chosen on the same reviews otherwise makes the interval too narrow at small m).
    m = n_uniform
    fitted = 2 if tuned else 1
    variance = sum(c * (y - lam * f - rectifier) ** 2 for c, (f, y, _) in zip(cost, sample)) / total ** 2
    variance *= m / (m - fitted) if m > fitted else 1.0
    half = _quantile(confidence, m - fitted) * math.sqrt(max(0.0, variance))
    return PoweredEstimate(value, max(0.0, value - half), min(1.0, value + half), n, n_reviewed, n_uniform, lam)


def prediction(label: str, belief: float | None, positive: str, choices: Sequence[str]) -> float | None:
    """The judge's prediction that a target is positive: its belief when it gave the positive label, one minus
    it when it gave the other of two labels (0 when it gave one of several others); None without a belief."""
    if belief is None or not label:
        return None
    if label == positive:
        return float(belief)
    return 1.0 - float(belief) if len(choices) == 2 else 0.0
