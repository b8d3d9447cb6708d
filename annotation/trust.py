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
* expected calibration error: sum over bins of (bin weight / total) * |agreement - mean belief| is the plug-in
  (``expected_calibration_error``, biased upward); the figure is the debiased one with an interval that holds
  at every true calibration error, 0 included (``annotation.calibration``);
* Brier score: scikit-learn `brier_score_loss` of belief against agreement (0/1);
* coverage/agreement curve and the agreement above a threshold: of the labels with
  belief >= t, the share of all labels they cover and their agreement with people.

n counts labels, not reviews: with k reviewers per label, pass each review's label as its
group (``groups``); every review weighs 1/k of its label, n is the number of labels and n_eff
is Kish's over the labels' summed weights.

An estimate is given only where it is defined: from ``MIN_LABELS`` reviewed labels (effective ones when
weighted; ``min_n``); below, the value is None with a ``reason`` saying what is missing, never a 0.000 standing
for "not enough data". Kappa also needs each side to have used two labels (else it is 0 or undefined by
construction); its interval, clipped to [-1, 1], waits for each side's rarer label ``KAPPA_INTERVAL_RAREST``
times, and a degenerate one is not shown. Over several questions (a screening queue's six aspects) kappa is
given per question only (``pooled_kappa_reason``). numpy, scipy, scikit-learn and statsmodels are imported
inside the functions (importing this module, at URL loading, costs nothing).
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from foundation.words import gettext

if TYPE_CHECKING:
    import numpy as np

CONFIDENCE = 0.95
DEFAULT_BINS = 10
#: The fewest reviewed labels (effective labels when weighted) an estimate is given from.
MIN_LABELS = 10
#: The fewest times each side (judge, people) must have given its rarer label before kappa gets an interval.
KAPPA_INTERVAL_RAREST = 10
#: Thresholds of the coverage/agreement curve: 0.00, 0.05, ..., 1.00.
CURVE_THRESHOLDS = tuple(round(i / 20, 2) for i in range(21))


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% interval, the number of labels and their effective number; without a value (or an
    interval), ``reason`` says why."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    n_eff: float
    reason: str = ""

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
    agreeing: int = 0  # reviews in the bin that agree (unweighted: the plain count beside ``count``)

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
    import numpy as np

    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError("one weight per review")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights must be finite and >= 0")
    return w


def _group_sums(w: np.ndarray, groups: Sequence[Hashable]) -> np.ndarray:
    import numpy as np

    if len(groups) != len(w):
        raise ValueError("one group per review")
    sums: dict[Hashable, float] = {}
    for group, weight in zip(groups, w):
        sums[group] = sums.get(group, 0.0) + float(weight)
    return np.asarray(list(sums.values()), dtype=float)


def label_count(n: int, groups: Sequence[Hashable] | None = None) -> int:
    """The number of labels: of distinct groups when given, else one per review."""
    return len(set(groups)) if groups is not None else n


def effective_n(weights: Sequence[float] | None, n: int | None = None,
                groups: Sequence[Hashable] | None = None) -> float:
    """Kish's effective sample size of the weights (n itself when unweighted), over the labels when ``groups``
    (each review's label) are given: (sum W)^2 / sum W^2 with W a label's summed weight."""
    import numpy as np

    if weights is None and groups is None:
        return float(n or 0)
    w = np.ones(len(groups)) if weights is None else np.asarray(weights, dtype=float)
    if groups is not None:
        w = _group_sums(w, groups)
    squares = float((w * w).sum())
    return float(w.sum()) ** 2 / squares if squares > 0 else 0.0


def too_few(n: int, n_eff: float, min_n: int, weighted: bool) -> str:
    """Why no estimate is given from these labels ('' when there are enough)."""
    if n_eff >= min_n - 1e-9:
        return ""
    if n == 0:
        return gettext("no reviewed label")
    if weighted:
        return gettext("%(n)s reviewed label(s) count as %(n_eff)s once weighted; an estimate needs at least %(min)s",
                       n=n, n_eff=f"{n_eff:.1f}", min=min_n)
    return gettext("%(n)s reviewed label(s); an estimate needs at least %(min)s", n=n, min=min_n)


def agreement(judge: Sequence[Hashable], human: Sequence[Hashable]) -> list[bool]:
    """Whether each review agrees with the judge's label."""
    if len(judge) != len(human):
        raise ValueError("one reviewer label per judge label")
    return [a == b for a, b in zip(judge, human)]


def accuracy(agree: Sequence[bool], weights: Sequence[float] | None = None, *,
             groups: Sequence[Hashable] | None = None, min_n: int = 1) -> Estimate:
    """Weighted share of agreeing reviews with a Wilson 95% interval on n_eff (None below ``min_n`` labels)."""
    import numpy as np
    from statsmodels.stats.proportion import proportion_confint

    w = _weights(weights, len(agree))
    n = label_count(len(agree), groups)
    total = float(w.sum())
    n_eff = effective_n(weights, len(agree), groups) if total > 0 else 0.0
    missing = too_few(n, n_eff, max(1, min_n), weights is not None)
    if missing:
        return Estimate(None, None, None, n, n_eff, missing)
    value = float((w * np.asarray(agree, dtype=float)).sum()) / total
    low, high = proportion_confint(value * n_eff, n_eff, alpha=1 - CONFIDENCE, method="wilson")
    # Exactly 0 and 1 at the edges (the formula leaves 5.6e-17 for none agreeing, 0.9999999999999999 for all).
    low = 0.0 if value <= 0 else min(max(float(low), 0.0), value)
    high = 1.0 if value >= 1 else max(min(float(high), 1.0), value)
    return Estimate(value, low, high, n, n_eff)


def kappa(judge: Sequence[Hashable], human: Sequence[Hashable], weights: Sequence[float] | None = None,
          labels: Sequence[Hashable] | None = None, *, groups: Sequence[Hashable] | None = None,
          min_n: int = 1) -> Estimate:
    """Cohen's kappa between judge and people with its asymptotic 95% interval, clipped to [-1, 1].

    None below ``min_n`` labels, and when the judge or the people gave one label throughout (chance explains
    all of the agreement: kappa is 0, or undefined when both did). The value without an interval while a side has
    given its rarer label fewer than KAPPA_INTERVAL_RAREST times (the asymptotic interval under-covers there).
    """
    import numpy as np
    from scipy.stats import norm
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    agreement(judge, human)  # checks the lengths
    w = _weights(weights, len(judge))
    n = label_count(len(judge), groups)
    total = float(w.sum())
    n_eff = effective_n(weights, len(judge), groups) if total > 0 else 0.0
    missing = too_few(n, n_eff, max(1, min_n), weights is not None)
    if missing:
        return Estimate(None, None, None, n, n_eff, missing)
    sides = [(side, Counter(x for x, weight in zip(values, w) if weight > 0))
             for side, values in ((gettext("the judge"), judge), (gettext("the people"), human))]
    for side, used in sides:
        if len(used) < 2:
            return Estimate(None, None, None, n, n_eff,
                            gettext("%(side)s gave one label (%(label)s) to every reviewed label: agreement beyond "
                                    "chance cannot be measured until both sides have used two labels",
                                    side=side, label=next(iter(used))))
    categories = list(labels) if labels is not None else sorted({*judge, *human}, key=str)
    rarest = min((min(used.values()), side) for side, used in sides)
    position = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for a, b, weight in zip(judge, human, w):
        table[position[a], position[b]] += weight
    table = table / table.sum()
    value = float(cohen_kappa_score(list(judge), list(human), labels=categories, sample_weight=w))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        std = float(cohens_kappa(table * n_eff, return_results=True).std_kappa)
    if not math.isfinite(std) or std <= 0:  # a degenerate table: no interval rather than [v, v]
        return Estimate(value, None, None, n, n_eff, gettext("the table of labels is degenerate: no interval"))
    if rarest[0] < KAPPA_INTERVAL_RAREST:
        # It covered 61-85%, not 95%, with a judge that mostly says one label (tests/annotation/test_trust.py).
        return Estimate(value, None, None, n, n_eff, gettext(
            "%(side)s gave its rarer label %(k)s time(s): the interval of kappa holds from about %(min)s of each "
            "side's rarer label, so none is given yet", side=rarest[1], k=rarest[0], min=KAPPA_INTERVAL_RAREST))
    half = float(norm.ppf(0.5 + CONFIDENCE / 2)) * std
    return Estimate(value, max(-1.0, value - half), min(1.0, value + half), n, n_eff)


def pooled_kappa_reason(questions: Sequence[Hashable] | None) -> str:
    """Why no kappa is given over reviews of several questions ('' for one): one table pooling, say, six yes/no
    questions measures that people pick from the same labels as the judge, not that they agree with it (reviewers
    answering at random got 0.46 on a screening queue)."""
    distinct = sorted({str(q) for q in questions or ()})
    if len(distinct) <= 1:
        return ""
    return gettext("the labels answer %(n)s questions (%(questions)s): kappa is given per criterion, never pooled "
                   "into one table", n=len(distinct), questions=", ".join(distinct))


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
    agreeing = [0] * bins
    for b, a, wi in zip(beliefs, agree, w):
        i = bin_index(float(b), bins)
        counts[i] += 1
        agreeing[i] += bool(a)
        weight[i] += wi
        belief_sum[i] += wi * float(b)
        agree_sum[i] += wi * float(bool(a))
    return [
        ReliabilityBin(
            lower=i / bins, upper=(i + 1) / bins, count=counts[i], weight=weight[i],
            mean_belief=belief_sum[i] / weight[i] if weight[i] > 0 else None,
            agreement=agree_sum[i] / weight[i] if weight[i] > 0 else None, agreeing=agreeing[i],
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
    import numpy as np
    from sklearn.metrics import brier_score_loss

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
    import numpy as np

    if population is not None:
        return sum(b >= threshold for b in population) / len(population) if len(population) else None
    total = float(w.sum())
    return float(w[np.asarray(beliefs, dtype=float) >= threshold].sum()) / total if total > 0 else None


def above_threshold(beliefs: Sequence[float], agree: Sequence[bool], threshold: float,
                    weights: Sequence[float] | None = None,
                    population: Sequence[float] | None = None, *, groups: Sequence[Hashable] | None = None,
                    min_n: int = 1) -> tuple[Estimate, float | None]:
    """Agreement (with its interval) of the reviewed labels whose belief >= threshold, and
    the share of labels at or above it: of `population` (every label's belief) when given,
    else estimated from the weighted reviews."""
    import numpy as np

    w = _weights(weights, len(beliefs))
    keep = np.asarray(beliefs, dtype=float) >= threshold if len(beliefs) else np.zeros(0, dtype=bool)
    kept_agree = [a for a, k in zip(agree, keep) if k]
    kept_weights = None if weights is None else [float(x) for x, k in zip(w, keep) if k]
    kept_groups = None if groups is None else [g for g, k in zip(groups, keep) if k]
    estimate = accuracy(kept_agree, kept_weights, groups=kept_groups, min_n=min_n)
    return estimate, _coverage(threshold, population, beliefs, w)


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
                  bins: int = DEFAULT_BINS, groups: Sequence[Hashable] | None = None, min_n: int = MIN_LABELS,
                  refused: str = "", questions: Sequence[Hashable] | None = None) -> dict:
    """Every trust figure of one set of reviews, as plain data.

    ``n`` counts labels (``groups``: each review's label), ``n_reviews`` the reviews, ``n_agree`` the reviews
    that agree with the judge. ``defined`` says whether any estimate can be given (``min_n`` labels, nothing
    ``refused``), ``reason`` why not; ECE and Brier are None where undefined, and every estimate carries its own
    ``reason``. ``refused``: a reason no estimate of this kind holds whatever the n (e.g. labels that had no
    chance of review). ``questions``: each review's question (a screening label's aspect); over more than one,
    kappa is not given (``pooled_kappa_reason``): compute it per question.
    """
    from annotation import calibration

    agree = agreement(judge, human)
    n = label_count(len(agree), groups)
    n_eff = effective_n(weights, len(agree), groups)
    reason = refused or too_few(n, n_eff, min_n, weights is not None)

    def given(estimate: Estimate) -> dict:
        return (Estimate(None, None, None, estimate.n, estimate.n_eff, refused) if refused else estimate).as_dict()

    figures = {
        "n": n,
        "n_reviews": len(agree),
        "n_agree": sum(agree),
        "n_eff": n_eff,
        "defined": not reason,
        "reason": reason,
        "min_n": min_n,
        "accuracy": given(accuracy(agree, weights, groups=groups, min_n=min_n)),
        "kappa": given(kappa(judge, human, weights, labels, groups=groups, min_n=min_n)
                       if not pooled_kappa_reason(questions) else
                       Estimate(None, None, None, n, n_eff, pooled_kappa_reason(questions))),
        "ece": given(calibration.calibration_error(beliefs, agree, weights, bins, groups=groups, min_n=min_n)),
        "ece_plugin": None if reason else expected_calibration_error(beliefs, agree, weights, bins),
        "brier": None if reason else brier_score(beliefs, agree, weights),
        "bins": [b.as_dict() for b in reliability_bins(beliefs, agree, weights, bins)],
        "curve": [p.as_dict() for p in coverage_curve(beliefs, agree, weights, population)],
        "threshold": threshold,
        "above_threshold": None,
        "coverage_above_threshold": None,
    }
    if threshold is not None:
        estimate, coverage = above_threshold(beliefs, agree, threshold, weights, population, groups=groups,
                                             min_n=min_n)
        figures["above_threshold"] = given(estimate)
        # Of every label's belief (a count, no estimate), or estimated from the reviews where they allow it.
        figures["coverage_above_threshold"] = coverage if population is not None or not reason else None
    return figures
