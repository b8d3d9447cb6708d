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
(inclusion probability u*), see `review_order`. The estimand is the share over these targets (the run's accuracy
on its results), so the reviewed targets' answers are known and only the unreviewed ones are estimated, each by
lambda f plus the rectifier, the mean of Y - lambda f over the reviews that stand for the unreviewed targets, each
weighted by v_i = (1 - pi_i) / pi_i (the Horvitz-Thompson estimate of the unreviewed total; a target certain to
be reviewed stands for none):

    theta = (sum_S Y_i + sum_unreviewed lambda f_j + N_u * rectifier) / N,   rectifier = sum_S v_i (Y_i - lambda f_i) / sum_S v_i.

Its variance is the unreviewed targets' own residual spread plus the rectifier's: (N_u sigma^2 + N_u^2
sum v^2 e^2 / (sum v)^2) / N^2 (with one inclusion probability, the finite-population variance of a uniform
sample). Lambda minimises it (the regression of Y on f: covariance from the reviews, spread of f from the
unreviewed targets, clipped to [0, 1]); sigma^2 is scaled by m / (m - 2) and the quantile is Student's t with m - 2
degrees of freedom (m - 1 and m / (m - 1) with lambda fixed), m the reviews from the uniform share. Near a share of
0 or 1, or with a judge rarely wrong, the residuals' sample variance is mostly 0 (the few surprises are missing
from the sample): sigma^2 is held at least at the variance the judge's beliefs imply while the reviews are
expected to hold fewer than about z^2 surprises, and the people's part gets Agresti and Coull's variance where
that is more (Agresti and Coull, "Approximate is better than 'exact' for interval estimation of binomial
proportions", Am. Stat. 1998). People only (lambda = 0) is the score interval of the unreviewed targets' share:
Wilson's with many of them (pooled two-proportion score test otherwise), on Kish's effective number of reviews.
Every target reviewed: the people's share itself, no interval. Values and ends are clipped to [0, 1]. With every
pi equal (a uniform sample) the point estimate is ppi_py's `ppi_mean_pointestimate` (tested against it).

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
    if unreviewed and n_uniform < max(1, min_uniform):
        return refused(gettext("%(n)s reviewed target(s) were not certain to be reviewed (drawn at random beyond the "
                               "triage order); the estimate rests on them and needs at least %(min)s",
                               n=n_uniform, min=min_uniform))
    if not unreviewed:
        # A census: every target was reviewed, so the share is the people's share itself, known exactly.
        value = _clip(sum(y for _, y, _ in sample) / n)
        return PoweredEstimate(value, value, value, n, n_reviewed, n_uniform, 0.0 if lam is None else float(lam))
    # The reviewed targets' answers are known; only the unreviewed ones are estimated. Each reviewed target drawn
    # at random stands for v = (1 - pi) / pi unreviewed ones (the Horvitz-Thompson estimate of the unreviewed
    # total is sum_S v_i y_i); one certain to be reviewed (pi = 1) stands for none.
    drawn = [(f, y, (1 - p) / p) for f, y, p in sample if p < 1]
    stand = sum(v for _, _, v in drawn)
    rest = [f for f, y in zip(f_all, observed) if y is None]
    tuned = lam is None
    if tuned:
        # The regression of Y on f over the unreviewed targets: the covariance from the reviews that stand for
        # them, the spread of f from the unreviewed targets themselves (known exactly; less overfit).
        f_mean = sum(v * f for f, _, v in drawn) / stand
        y_mean = sum(v * y for _, y, v in drawn) / stand
        together = sum(v * (f - f_mean) * (y - y_mean) for f, y, v in drawn) / stand
        spread = _variance(rest)
        lam = min(1.0, max(0.0, together / spread)) if spread > 0 else 1.0
    rectifier = sum(v * (y - lam * f) for f, y, v in drawn) / stand
    known = sum(y for _, y, _ in sample)
    value = (known + lam * sum(rest) + unreviewed * rectifier) / n
    share = _unreviewed_share(drawn, unreviewed, confidence)
    if lam == 0:
        # People only: the Wilson score interval of the unreviewed targets' share, on the effective number of
        # draws its error has (the reviews' and the unreviewed targets' own), scaled to their part of the whole.
        low, high = ((known + unreviewed * bound) / n for bound in share.wilson)
        return PoweredEstimate(_clip(value), _clip(min(low, value)), _clip(max(high, value)), n, n_reviewed,
                               n_uniform, 0.0)
    # The error is the unreviewed targets' residuals (each its own, sigma^2) less the rectifier's (from the reviews,
    # their design variance). Two quantities are estimated from the m reviews of the uniform share (the rectifier
    # and lambda): sigma^2 is scaled by m / (m - 2) and the quantile is Student's t with m - 2 degrees of freedom,
    # as for a regression (lambda chosen on the same reviews otherwise makes the interval too narrow at small m).
    m = n_uniform
    fitted = 2 if tuned else 1
    squares = [(v, (y - lam * f - rectifier) ** 2) for f, y, v in drawn]
    sigma2 = sum(v * e2 for v, e2 in squares) / stand * (m / (m - fitted) if m > fitted else 1.0)
    # A judge that is rarely wrong is wrong in few reviews, or none: sigma^2 is then near 0 while each unreviewed
    # target's answer still varies as much as the judge's own belief says (f (1 - f) for a calibrated judge). Where
    # the reviews are expected to hold fewer than about z^2 such surprises (m f (1 - f) small: the Poisson regime,
    # in which a sample variance is mostly 0), the residual variance is held at least at that, fading out as the
    # expected count grows and the sample variance becomes trustworthy: for the unreviewed targets' own residuals
    # and the rectifier's alike.
    implied = sum(f * (1 - f) for f in rest) / unreviewed
    z2 = _quantile(confidence, 0) ** 2
    sigma2 = max(sigma2, implied * z2 / (z2 + m * implied))
    rectified = max(sum(v * v * e2 for v, e2 in squares) / stand ** 2, sigma2 / share.n_eff)
    variance = unreviewed * sigma2 + unreviewed ** 2 * rectified
    # The residuals' spread is unseen where it matters most: near a share of 0 or 1 the few targets the judge gets
    # wrong are missing from most samples, and the residual variance comes out near 0. The people's labels in the
    # residual get the variance Agresti and Coull's z^2 pseudo-reviews give them (what makes Wilson's interval
    # cover at the edges) where that is more than their sample variance: the variance is raised by the difference.
    # Nothing changes away from the edges, where the sample variance is the larger.
    variance = (variance + unreviewed ** 2 * share.edge_variance) / n ** 2
    half = _quantile(confidence, m - fitted) * math.sqrt(max(0.0, variance))
    return PoweredEstimate(_clip(value), _clip(value - half), _clip(value + half), n, n_reviewed, n_uniform, lam)


@dataclass(frozen=True)
class _Share:
    """The people's share over the unreviewed targets, as the reviews estimate it: its Wilson interval, and how
    much more variance Agresti and Coull's pseudo-reviews give it than its sample variance does (0 when less)."""

    wilson: tuple[float, float]
    edge_variance: float
    n_eff: float


def _unreviewed_share(drawn: Sequence[tuple[float, float, float]], unreviewed: int, confidence: float) -> _Share:
    """The reviews' estimate p of the unreviewed targets' share (weighted by v, what each stands for) and its
    error's effective number of draws: 1 / n* = 1 / n_eff + 1 / (unreviewed), n_eff = (sum v)^2 / sum v^2 (Kish's
    effective sample size of the weighted reviews; the second term the unreviewed targets' own Bernoulli
    spread). With one inclusion probability, n* is the finite-population one, m (N - m) / N of a uniform sample."""
    stand = sum(v for _, _, v in drawn)
    share = _clip(sum(v * y for _, y, v in drawn) / stand)
    n_eff = stand * stand / sum(v * v for _, _, v in drawn)
    n_star = 1 / (1 / n_eff + 1 / unreviewed)
    low, high = _score_prediction(share, n_eff, unreviewed, confidence)
    m = len(drawn)
    sampled = sum(v * (y - share) ** 2 for _, y, v in drawn) / stand * (m / (m - 1) if m > 1 else 1.0) / n_star
    z2 = _quantile(confidence, 0) ** 2
    centre = (share * n_star + z2 / 2) / (n_star + z2)
    return _Share((float(low), float(high)), max(0.0, centre * (1 - centre) / (n_star + z2) - sampled), n_eff)


def _score_prediction(share: float, n_eff: float, unreviewed: int, confidence: float) -> tuple[float, float]:
    """The unreviewed targets' share q, from the reviews' share p of n_eff draws: the q the score test of p = q
    accepts, its variance under that null, (p - q)^2 <= z^2 r (1 - r) (1 / n_eff + 1 / unreviewed) with r the
    share of both together (Wilson's interval when the unreviewed targets are many; the pooled score test of two
    proportions otherwise, which keeps its level with few of them where the unpooled one does not)."""
    import numpy as np

    z2 = _quantile(confidence, 0) ** 2
    a = 1 / n_eff + 1 / unreviewed
    alpha = n_eff / (n_eff + unreviewed)
    # r = alpha p + (1 - alpha) q; (p - q)^2 - z2 a r (1 - r) as c2 q^2 + c1 q + c0.
    r0, r1 = alpha * share, 1 - alpha
    c2 = 1 + z2 * a * r1 * r1
    c1 = -2 * share - z2 * a * r1 * (1 - 2 * r0)
    c0 = share * share - z2 * a * r0 * (1 - r0)
    roots = np.roots([c2, c1, c0]).real
    return _clip(float(min(roots.min(), share))), _clip(float(max(roots.max(), share)))


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def prediction(label: str, belief: float | None, positive: str, choices: Sequence[str]) -> float | None:
    """The judge's prediction that a target is positive: its belief when it gave the positive label, one minus
    it when it gave the other of two labels (0 when it gave one of several others); None without a belief."""
    if belief is None or not label:
        return None
    if label == positive:
        return float(belief)
    return 1.0 - float(belief) if len(choices) == 2 else 0.0
