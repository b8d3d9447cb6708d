"""Every pair compared: exact McNemar between every two cells, humans against each cell, one corrected family
(no Django inside; numpy and scipy, imported where used).

- :func:`mcnemar_pairs`: for every two respondents (cells), the 2x2 table of their outcomes on the keys
  ((item, content version) pairs) both have, counted for all pairs at once with two matrix products, and
  the two-sided exact McNemar p-value (binomial on the discordant pairs, :func:`paired.mcnemar_exact_many`);
- :func:`humans_vs_model`: people against one cell on the items both answered. Each item has several raters
  (three by default) who share the item's difficulty, so they are not independent answers: **the item is
  the unit**. Per item, ``d = (share of the item's raters right) - (model right, 1 or 0)``. The test is the
  paired sign-flip (permutation) test of mean(d) = 0 (H0: on each item the human share and the model's
  outcome are exchangeable, so d is symmetric about 0): exact over every sign pattern up to
  :data:`EXACT_MAX` non-zero items, else :data:`FLIP_DRAWS` seeded draws with ``p = (1 + hits) / (1 + draws)``.
  The interval of the accuracy difference is Student's t over the items' d with two pseudo-items (+1 and -1)
  added, an Agresti-Min-style adjustment (:func:`mean_ci`), from :data:`MIN_ITEMS_CI` items on (none below, and
  never a zero-width one). With one rater per item the test is the sign test on the discordant items, i.e. exact
  McNemar (a test holds them equal);
- :func:`pairwise`: both kinds in one family, corrected by Holm (family-wise) or Benjamini-Hochberg (false
  discovery rate), as the researcher chooses (:data:`paired.CORRECTIONS`).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from evaluation.statistics.paired import ALPHA, CORRECTIONS, adjust, mcnemar_exact_many

#: Up to this many items with d != 0 the sign-flip test enumerates every sign pattern (2**16 = 65,536).
EXACT_MAX = 16
FLIP_DRAWS = 20_000
#: The fewest items for the interval of people against a model: below, any 95% interval over items covered far
#: less (the percentile bootstrap: 27-86% at 3-10 items, and [0, 0] when every item had the same d).
MIN_ITEMS_CI = 10
SEED = 20240521

MCNEMAR = "exact McNemar"
SIGN_FLIP = "item sign-flip"
HUMANS = "humans"


@dataclass(frozen=True)
class PairTest:
    """One pair on the keys both have. ``a_better`` / ``b_better``: the discordant pairs (McNemar); for humans
    against a model they are the items where the human share is above / below the model's outcome."""

    a: str
    b: str
    test: str
    n: int  # keys (items at one version) both have
    a_only: int
    b_only: int
    a_accuracy: float | None  # on the n keys (humans: mean over items of the share of raters right)
    b_accuracy: float | None
    a_better: int
    b_better: int
    p_value: float | None  # None: no common key
    ci95: tuple[float, float] | None = None  # of a_accuracy - b_accuracy (humans: `mean_ci` over items)
    raters: int | None = None  # humans: answers on the n items
    p_adjusted: float | None = None

    @property
    def difference(self) -> float | None:
        return None if self.a_accuracy is None else self.a_accuracy - self.b_accuracy

    @property
    def significant(self) -> bool:
        return self.p_adjusted is not None and self.p_adjusted < ALPHA

    @property
    def winner(self) -> str:
        """The better side on the pairs ('' when even or untested)."""
        if not self.n or self.difference is None or abs(self.difference) < 1e-12:
            return ""
        return self.a if self.difference > 0 else self.b

    def as_json(self) -> dict:
        out = asdict(self)
        out.update(ci95=list(self.ci95) if self.ci95 else None, difference=self.difference,
                   significant=self.significant if self.p_adjusted is not None else None, winner=self.winner)
        return out


@dataclass
class Pairwise:
    """Every pair of ``labels`` (in their order: a before b), corrected as one family."""

    labels: list[str]
    tests: list[PairTest]
    correction: str
    alpha: float = ALPHA
    notes: list[str] = field(default_factory=list)

    @property
    def correction_label(self) -> str:
        name, controls = CORRECTIONS[self.correction]
        return f"{name} ({controls})"

    def get(self, a: str, b: str) -> PairTest | None:
        return next((t for t in self.tests if {t.a, t.b} == {a, b}), None)

    def matrix(self) -> tuple[list[list[float | None]], list[list[float | None]]]:
        """(signed difference row - column, corrected p) for every (row, column); None on the diagonal and
        where a pair has no common key."""
        index = {label: i for i, label in enumerate(self.labels)}
        size = len(self.labels)
        diff: list[list[float | None]] = [[None] * size for _ in range(size)]
        p: list[list[float | None]] = [[None] * size for _ in range(size)]
        for t in self.tests:
            i, j = index[t.a], index[t.b]
            if t.n and t.difference is not None:
                diff[i][j], diff[j][i] = t.difference, -t.difference
                p[i][j] = p[j][i] = t.p_adjusted
        return diff, p

    def as_json(self) -> dict:
        return {"labels": self.labels, "correction": self.correction, "correction_label": self.correction_label,
                "alpha": self.alpha, "notes": self.notes, "tests": [t.as_json() for t in self.tests]}


def _index(outcomes: Sequence[Mapping[Hashable, bool]]):
    import numpy as np

    keys = {k for o in outcomes for k in o}
    position = {k: i for i, k in enumerate(keys)}
    right = np.zeros((len(outcomes), len(keys)))
    wrong = np.zeros_like(right)
    for row, o in enumerate(outcomes):
        for key, ok in o.items():
            (right if ok else wrong)[row, position[key]] = 1.0
    return right, wrong


def mcnemar_pairs(labels: Sequence[str], outcomes: Sequence[Mapping[Hashable, bool]]) -> list[PairTest]:
    """Exact McNemar for every pair (i < j) of respondents, each {key: correct}, on the keys both have."""
    right, wrong = _index(outcomes)
    present = right + wrong
    a_right_b_wrong = right @ wrong.T
    both = present @ present.T
    right_on_common = right @ present.T  # [i, j]: keys i has right among those both have
    have = present.sum(axis=1)
    pairs = [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))]
    tested = [(i, j) for i, j in pairs if both[i, j] > 0]
    p = dict(zip(tested, mcnemar_exact_many([(int(a_right_b_wrong[i, j]), int(a_right_b_wrong[j, i]))
                                              for i, j in tested])))
    out = []
    for i, j in pairs:
        n = int(both[i, j])
        out.append(PairTest(a=labels[i], b=labels[j], test=MCNEMAR, n=n, a_only=int(have[i]) - n,
                            b_only=int(have[j]) - n, a_accuracy=right_on_common[i, j] / n if n else None,
                            b_accuracy=right_on_common[j, i] / n if n else None,
                            a_better=int(a_right_b_wrong[i, j]), b_better=int(a_right_b_wrong[j, i]),
                            p_value=p.get((i, j))))
    return out


def _grouped(d):
    """Distinct |d| values (rounded, so equal fractions group) and how many items have each."""
    import numpy as np

    magnitudes = np.round(np.abs(d), 12)
    values, counts = np.unique(magnitudes[magnitudes > 0], return_counts=True)
    return values, counts


def sign_flip_p(d: Sequence[float], *, seed: int = SEED, draws: int = FLIP_DRAWS) -> float:
    """Two-sided p of the paired sign-flip test of mean(d) = 0: the share of sign patterns whose |sum| reaches
    the observed one (exact up to EXACT_MAX non-zero d, else seeded Monte Carlo, (1 + hits) / (1 + draws))."""
    import numpy as np

    d = np.asarray(d, dtype=float)
    observed = abs(float(d.sum()))
    nonzero = d[np.abs(d) > 1e-12]
    if nonzero.size == 0:
        return 1.0
    tolerance = 1e-9
    if nonzero.size <= EXACT_MAX:
        patterns = (np.arange(2 ** nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1
        sums = np.abs((2.0 * patterns - 1.0) @ np.abs(nonzero))
        return float(np.mean(sums >= observed - tolerance))
    # The sum under random signs: per distinct |d| value v with k items, v * (2 * Binomial(k, 1/2) - k).
    values, counts = _grouped(nonzero)
    rng = np.random.default_rng(seed)
    flips = rng.binomial(counts, 0.5, size=(draws, len(counts)))
    sums = np.abs((2.0 * flips - counts) @ values)
    return float((1 + np.sum(sums >= observed - tolerance)) / (1 + draws))


def mean_ci(d: Sequence[float]) -> tuple[float, float] | None:
    """95% interval of mean(d) over the items (each d in [-1, 1]): Student's t on d with two pseudo-items, +1 and
    -1, added (as Agresti and Min add pseudo-counts to a paired table). Without them the t interval covered 76-90%
    at 10-20 items when both accuracies are near 1; with them, >= 95% at every accuracy from 10 items on, wider at
    few items (tests/evaluation/statistics/test_pairwise.py). None below MIN_ITEMS_CI items."""
    import numpy as np
    from scipy.stats import t

    if len(d) < MIN_ITEMS_CI:
        return None
    x = np.concatenate([np.asarray(d, dtype=float), [1.0, -1.0]])
    n, mean = x.size, float(x.mean())
    half = float(t.ppf(0.975, n - 1)) * float(x.std(ddof=1)) / n ** 0.5
    return max(-1.0, mean - half), min(1.0, mean + half)


def humans_vs_model(humans: Mapping[Hashable, tuple[int, int]], model: Mapping[Hashable, bool], *,
                    model_label: str, seed: int = SEED) -> PairTest:
    """People (key -> (correct answers, answers)) against a cell (key -> correct) on the keys both have."""
    common = [k for k in humans if humans[k][1] > 0 and k in model]
    human_keys = sum(1 for k in humans if humans[k][1] > 0)
    if not common:
        return PairTest(a=HUMANS, b=model_label, test=SIGN_FLIP, n=0, a_only=human_keys, b_only=len(model),
                        a_accuracy=None, b_accuracy=None, a_better=0, b_better=0, p_value=None, raters=0)
    shares = [humans[k][0] / humans[k][1] for k in common]
    machine = [1.0 if model[k] else 0.0 for k in common]
    d = [h - m for h, m in zip(shares, machine)]
    n = len(common)
    return PairTest(a=HUMANS, b=model_label, test=SIGN_FLIP, n=n, a_only=human_keys - n, b_only=len(model) - n,
                    a_accuracy=sum(shares) / n, b_accuracy=sum(machine) / n,
                    a_better=sum(1 for x in d if x > 1e-12), b_better=sum(1 for x in d if x < -1e-12),
                    p_value=sign_flip_p(d, seed=seed), ci95=mean_ci(d),
                    raters=sum(humans[k][1] for k in common))


def pairwise(labels: Sequence[str], outcomes: Sequence[Mapping[Hashable, bool]], *, correction: str = "holm",
             humans: Mapping[Hashable, tuple[int, int]] | None = None, seed: int = SEED) -> Pairwise:
    """Every pair of cells (exact McNemar) and, with ``humans``, people against each cell (item sign-flip),
    corrected together as one family by ``correction``."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r}; choose from {', '.join(CORRECTIONS)}")
    tests = mcnemar_pairs(labels, outcomes)
    order = list(labels)
    if humans:
        order = [HUMANS, *order]
        tests = [humans_vs_model(humans, o, model_label=label, seed=seed)
                 for label, o in zip(labels, outcomes)] + tests
    adjusted = adjust([t.p_value for t in tests], correction)
    return Pairwise(labels=order, tests=[replace(t, p_adjusted=p) for t, p in zip(tests, adjusted)],
                    correction=correction)
