"""Paired comparisons of two sets of outcomes on the same (item, version) pairs (no Django inside).

- :func:`pair_outcomes`: keep only the keys present on both sides and count what each side loses;
- :func:`mcnemar_exact`: the exact McNemar test (statsmodels), and :func:`mcnemar_exact_many`, the
  same formula (two-sided binomial on the discordant pairs, scipy) for a whole table in one call;
- :func:`holm`: Holm's step-down correction of a family of p-values, equal to statsmodels
  ``multipletests(method="holm")`` (tests hold them equal) without its ``gc.collect()``, which
  costs a web request 0.1-0.7 s; :func:`benjamini_hochberg`, the false-discovery-rate step-up
  correction, equal to ``multipletests(method="fdr_bh")``; :func:`adjust` picks one by name;
- :func:`wilson` / :func:`wilson_many`: the Wilson 95% interval (statsmodels ``proportion_confint``;
  one vectorised call for many proportions), its bounds held to [0, 1], exactly 0 at no success and 1 at all.

numpy, scipy and statsmodels are imported inside the functions that use them (the selectors import this
module at URL loading).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from foundation.words import gettext_noop

#: Significance level of the marks in the tables (after Holm's correction).
ALPHA = 0.05


@dataclass(frozen=True)
class Paired:
    """Outcomes of a reference and a candidate on their common keys.

    ``ref_only`` / ``other_only``: keys one side has and the other lacks (another item
    version counts as another key), dropped from the test.
    """

    both_right: int
    ref_right_other_wrong: int
    ref_wrong_other_right: int
    both_wrong: int
    ref_only: int
    other_only: int

    @property
    def n(self) -> int:
        return self.both_right + self.ref_right_other_wrong + self.ref_wrong_other_right + self.both_wrong

    @property
    def discordant(self) -> tuple[int, int]:
        """[reference right / other wrong, reference wrong / other right]."""
        return self.ref_right_other_wrong, self.ref_wrong_other_right

    @property
    def dropped(self) -> int:
        return self.ref_only + self.other_only

    @property
    def p_value(self) -> float | None:
        """Exact McNemar p (None without any common key)."""
        return mcnemar_exact(*self.discordant) if self.n else None

    def table(self) -> list[list[int]]:
        """The 2x2 table: rows reference right/wrong, columns other right/wrong."""
        return [[self.both_right, self.ref_right_other_wrong], [self.ref_wrong_other_right, self.both_wrong]]


def pair_outcomes(reference: Mapping[Hashable, bool], other: Mapping[Hashable, bool]) -> Paired:
    """Cross two {key: correct} maps on the keys they share."""
    common = reference.keys() & other.keys()
    counts = [[0, 0], [0, 0]]
    for key in common:
        counts[0 if reference[key] else 1][0 if other[key] else 1] += 1
    return Paired(both_right=counts[0][0], ref_right_other_wrong=counts[0][1], ref_wrong_other_right=counts[1][0],
                  both_wrong=counts[1][1], ref_only=len(reference.keys() - common),
                  other_only=len(other.keys() - common))


def mcnemar_exact(ref_right_other_wrong: int, ref_wrong_other_right: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts (1.0 when there are none)."""
    from statsmodels.stats.contingency_tables import mcnemar

    result = mcnemar([[0, ref_right_other_wrong], [ref_wrong_other_right, 0]], exact=True)
    return float(result.pvalue)


def mcnemar_exact_many(discordant: Sequence[tuple[int, int]]) -> list[float]:
    """Exact McNemar p-values of many (b, c) pairs at once: statsmodels' formula, min(1, 2 * Binom(b + c, 1/2)
    cdf at min(b, c)), vectorised."""
    import numpy as np
    from scipy.stats import binom

    if not discordant:
        return []
    counts = np.asarray(discordant, dtype=float).reshape(-1, 2)
    p = binom.cdf(counts.min(axis=1), counts.sum(axis=1), 0.5) * 2
    return [float(v) for v in np.minimum(p, 1)]


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-corrected p-values in the same order; None entries (no test) stay None and are not counted."""
    import numpy as np

    present = [i for i, p in enumerate(p_values) if p is not None]
    corrected: list[float | None] = [None] * len(p_values)
    if present:
        p = np.asarray([p_values[i] for i in present], dtype=float)
        order = np.argsort(p)
        stepped = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
        adjusted = np.empty_like(p)
        adjusted[order] = np.minimum(stepped, 1.0)
        for i, value in zip(present, adjusted):
            corrected[i] = float(value)
    return corrected


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate) in the same order; None entries stay None and
    are not counted."""
    import numpy as np

    present = [i for i, p in enumerate(p_values) if p is not None]
    corrected: list[float | None] = [None] * len(p_values)
    if present:
        p = np.asarray([p_values[i] for i in present], dtype=float)
        m = len(p)
        order = np.argsort(p)[::-1]  # largest first: the step-up takes the running minimum from the top
        stepped = np.minimum.accumulate(p[order] * m / np.arange(m, 0, -1))
        adjusted = np.empty_like(p)
        adjusted[order] = np.minimum(stepped, 1.0)
        for i, value in zip(present, adjusted):
            corrected[i] = float(value)
    return corrected


#: The corrections a researcher chooses from: name -> (label, what it controls).
CORRECTIONS: dict[str, tuple[str, str]] = {
    "holm": ("Holm", gettext_noop("family-wise error rate")),
    "bh": ("Benjamini-Hochberg", gettext_noop("false discovery rate")),
}


def adjust(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """The p-values corrected by ``method`` ("holm" or "bh", see CORRECTIONS)."""
    if method == "holm":
        return holm(p_values)
    if method == "bh":
        return benjamini_hochberg(p_values)
    raise ValueError(f"correction {method!r}; choose from {', '.join(CORRECTIONS)}")


def wilson(correct: float, n: float, *, alpha: float = 0.05) -> tuple[float | None, float | None]:
    """Wilson score interval of correct/n at level 1 - alpha (None, None when n is 0), held as `_held_exact`."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return None, None
    low, high = proportion_confint(correct, n, alpha=alpha, method="wilson")
    return _held_exact(float(low), float(high), correct, n)


def wilson_many(correct: Sequence[int], n: Sequence[int], *, alpha: float = 0.05
                ) -> list[tuple[float | None, float | None]]:
    """Wilson intervals of many proportions in one statsmodels call ((None, None) where n is 0), each held as
    `_held_exact`."""
    import numpy as np
    from statsmodels.stats.proportion import proportion_confint

    if not n:
        return []
    count, nobs = np.asarray(correct, dtype=float), np.asarray(n, dtype=float)
    safe = np.where(nobs > 0, nobs, 1.0)
    low, high = proportion_confint(np.where(nobs > 0, count, 0.0), safe, alpha=alpha, method="wilson")
    return [_held_exact(float(lo), float(hi), k, size) if size > 0 else (None, None)
            for lo, hi, k, size in zip(np.atleast_1d(low), np.atleast_1d(high), count, nobs)]


def _held_exact(low: float, high: float, correct: float, n: float) -> tuple[float, float]:
    """Wilson's bounds where they are exactly: within [0, 1] and around the share, 0 for no success and 1 for all
    (statsmodels computes centre -/+ half-width, which leaves 2.8e-17 for 0 correct of 7 and 0.9999999999999999
    for 7 of 7)."""
    share = correct / n
    low = 0.0 if correct <= 0 else min(max(low, 0.0), share)
    high = 1.0 if correct >= n else max(min(high, 1.0), share)
    return low, high
