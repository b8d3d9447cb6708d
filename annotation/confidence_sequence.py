"""Anytime-valid confidence sequences for the mean of a quantity in [0, 1] (pure, no Django).

A confidence sequence (C_1, C_2, ...) covers the mean mu at every time at once with probability at least
1 - alpha: P(for all t, mu in C_t) >= 1 - alpha. So the interval reported after any stopping rule that looks at
the data (stop as soon as the interval is narrow enough) keeps its coverage, where a fixed-n interval computed at
a data-chosen n does not (it covers less: optional stopping).

Two of Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 86(1), 2024
(arXiv 2010.09686, 2020), for X_1, X_2, ... in [0, 1] with conditional mean mu (independent draws, or the
audit sample of a review queue taken in its random order):

* ``hedged`` (the default, their Theorem 3 with the predictable plug-in bets of their eq. (26)): for each candidate
  mean m a bettor's capital K_t(m) = 1/2 prod (1 + l+_i (X_i - m)) + 1/2 prod (1 - l-_i (X_i - m)), with
  l_i = sqrt(2 log(2 / alpha) / (s2_{i-1} i log(1 + i))) capped at c / m (c / (1 - m) for the other side),
  c = 1/2, s2 the running variance estimate; C_t = {m : K_t(m) < 1 / alpha} (Ville's inequality), computed on a
  grid of candidate means (``GRID`` points, the interval widened by one grid step each side, so conservative);
* ``empirical_bernstein`` (their Theorem 2, the predictable plug-in empirical-Bernstein CS): closed form,
  sum l_i X_i / sum l_i +- (log(2 / alpha) + sum v_i psi_E(l_i)) / sum l_i, v_i = 4 (X_i - mu_{i-1})^2,
  psi_E(l) = (-log(1 - l) - l) / 4, l_i capped at c.

Both are running intersections (C_t is within C_{t-1}: still valid, never wider later) clipped to [0, 1].
The bets do not depend on any target, so setting or changing a precision target leaves the sequence valid.

``more_needed`` says how many more observations would bring the half-width down to a target: it continues the
sequence with observations whose running mean stays at the current estimate (0s and 1s spread evenly: the
variance of a yes/no quantity, the most a [0, 1] quantity with that mean can have, so it errs on the side of
more), up to ``MAX_MORE``.

numpy is imported inside the functions, as in `annotation.trust`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

ALPHA = 0.05
#: The bets' cap c (1/2 or 3/4 in the paper; 1/2 is their default).
CAP = 0.5
#: Candidate means of the hedged sequence: 0, 1/GRID, ..., 1.
GRID = 2000
#: The most further observations `more_needed` looks ahead.
MAX_MORE = 20000
METHODS = ("hedged", "empirical_bernstein")


@dataclass(frozen=True)
class SequenceInterval:
    """Where a confidence sequence is after n observations: the running mean, its interval (valid at every n at
    once) and the interval's half-width."""

    n: int
    mean: float | None
    low: float
    high: float
    method: str
    alpha: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def as_dict(self) -> dict:
        return {**asdict(self), "half_width": self.half_width}


def _check(x: Sequence[float], alpha: float, method: str):
    import numpy as np

    values = np.asarray(x, dtype=float).reshape(-1)
    if values.size and (not np.isfinite(values).all() or values.min() < 0 or values.max() > 1):
        raise ValueError("observations are in [0, 1]")
    if not 0 < alpha < 1:
        raise ValueError("alpha is between 0 and 1")
    if method not in METHODS:
        raise ValueError(f"method is one of {METHODS}")
    return values


class _Running:
    """The predictable plug-in estimates: each observation's bet uses the mean and variance of those before it."""

    def __init__(self):
        self.t = 0
        self.total = 0.0
        self.squares = 0.0
        self.mean = 0.5   # mu_0 = 1/2
        self.var = 0.25   # sigma^2_0 = 1/4

    def chunk(self, x, alpha: float):
        """For the observations x (a numpy array) coming next: each one's bet and the running mean before it."""
        import numpy as np

        t = self.t + np.arange(1, x.size + 1)
        means = (0.5 + self.total + np.cumsum(x)) / (t + 1)
        squares = self.squares + np.cumsum((x - means) ** 2)
        variances = (0.25 + squares) / (t + 1)
        before_mean = np.concatenate([[self.mean], means[:-1]])
        before_var = np.concatenate([[self.var], variances[:-1]])
        bets = np.sqrt(2 * math.log(2 / alpha) / (before_var * t * np.log1p(t)))
        self.t, self.total, self.squares = int(t[-1]), float(self.total + x.sum()), float(squares[-1])
        self.mean, self.var = float(means[-1]), float(variances[-1])
        return bets, before_mean


class _Hedged:
    """The hedged capital over the candidate means still in the sequence (a contiguous run of the grid)."""

    def __init__(self, alpha: float, grid: int):
        import numpy as np

        self.alpha, self.grid = alpha, grid
        self.m = np.linspace(0.0, 1.0, grid + 1)
        self.lo, self.hi = 0, grid + 1   # candidates m[lo:hi] are alive
        self.plus = np.zeros(grid + 1)  # log capital of the bettor on X > m, and on X < m
        self.minus = np.zeros(grid + 1)
        self.out = np.zeros(grid + 1, dtype=bool)  # rejected at some time
        self.running = _Running()
        self.threshold = 1 / alpha
        self.last = (0.0, 1.0)

    def add(self, x) -> tuple:
        """Take the observations x (a numpy array, in order); the interval after each of them: (lows, highs)."""
        import numpy as np

        bets, _ = self.running.chunk(x, self.alpha)
        m = self.m[self.lo:self.hi]
        with np.errstate(divide="ignore"):
            up = np.minimum(bets[:, None], CAP / m[None, :])
            down = np.minimum(bets[:, None], CAP / (1 - m[None, :]))
        gap = x[:, None] - m[None, :]
        plus = self.plus[self.lo:self.hi] + np.cumsum(np.log1p(up * gap), axis=0)
        minus = self.minus[self.lo:self.hi] + np.cumsum(np.log1p(-down * gap), axis=0)
        # The log capitals at the chunk's start are at most CAPITAL_CAP and each observation adds at most
        # log(1 + CAP): exp cannot overflow within a chunk.
        capital = 0.5 * (np.exp(plus) + np.exp(minus))
        # The running intersection: a candidate once rejected stays out.
        alive = ~(np.logical_or.accumulate(capital >= self.threshold, axis=0) | self.out[self.lo:self.hi])
        any_alive = alive.any(axis=1)
        first = np.where(any_alive, alive.argmax(axis=1), capital.argmin(axis=1))
        last = np.where(any_alive, alive.shape[1] - 1 - alive[:, ::-1].argmax(axis=1), first)
        step = 1.0 / self.grid
        lows = np.maximum(0.0, m[first] - step)
        highs = np.minimum(1.0, m[last] + step)
        self.out[self.lo:self.hi] = ~alive[-1]
        # A rejected candidate's capital no longer matters: capped, so that exp never overflows later.
        self.plus[self.lo:self.hi] = np.minimum(plus[-1], CAPITAL_CAP)
        self.minus[self.lo:self.hi] = np.minimum(minus[-1], CAPITAL_CAP)
        self.lo, self.hi = self.lo + int(first[-1]), self.lo + int(last[-1]) + 1
        self.last = (float(lows[-1]), float(highs[-1]))
        return lows, highs


class _Bernstein:
    """The predictable plug-in empirical-Bernstein sequence, as running sums."""

    def __init__(self, alpha: float):
        self.alpha = alpha
        self.running = _Running()
        self.bets = self.weighted = self.penalty = 0.0
        self.last = (0.0, 1.0)

    def add(self, x) -> tuple:
        import numpy as np

        bets, before = self.running.chunk(x, self.alpha)
        bets = np.minimum(bets, CAP)
        # v_i psi_E(l_i) = 4 (X_i - mu_{i-1})^2 (-log(1 - l_i) - l_i) / 4
        penalty = self.penalty + np.cumsum((x - before) ** 2 * (-np.log1p(-bets) - bets))
        total = self.bets + np.cumsum(bets)
        weighted = self.weighted + np.cumsum(bets * x)
        centre = weighted / total
        margin = (math.log(2 / self.alpha) + penalty) / total
        lows = np.maximum.accumulate(np.maximum(np.maximum(centre - margin, 0.0), self.last[0]))
        highs = np.minimum.accumulate(np.minimum(np.minimum(centre + margin, 1.0), self.last[1]))
        empty = lows > highs  # a miss (probability <= alpha): shown as the point nearest the centre
        if empty.any():
            point = np.clip(centre, np.minimum(lows, highs), np.maximum(lows, highs))
            lows, highs = np.where(empty, point, lows), np.where(empty, point, highs)
        self.penalty, self.bets, self.weighted = float(penalty[-1]), float(total[-1]), float(weighted[-1])
        self.last = (float(lows[-1]), float(highs[-1]))
        return lows, highs


#: Observations taken at once (the hedged capital is a chunk x candidates array): few while every candidate is
#: alive, more as the interval narrows.
FIRST_CHUNK, CHUNK = 8, 512
#: Log capitals are kept at most this (far above log(2 / alpha): only rejected candidates reach it).
CAPITAL_CAP = 50.0


def _state(alpha: float, method: str, grid: int):
    return _Hedged(alpha, grid) if method == "hedged" else _Bernstein(alpha)


def _feed(state, values) -> tuple:
    """Feed the observations to the state in chunks; the interval after each: (lows, highs) as numpy arrays."""
    import numpy as np

    parts, start, size = [], 0, FIRST_CHUNK
    while start < values.size:
        parts.append(state.add(values[start:start + size]))
        start, size = start + size, min(2 * size, CHUNK)
    if not parts:
        return np.zeros(0), np.zeros(0)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def path(x: Sequence[float], *, alpha: float = ALPHA, method: str = "hedged",
         grid: int = GRID) -> tuple[list[float], list[float]]:
    """The sequence's interval after each observation: (lows, highs), one of each per observation."""
    values = _check(x, alpha, method)
    lows, highs = _feed(_state(alpha, method, grid), values)
    return lows.tolist(), highs.tolist()


def confidence_sequence(x: Sequence[float], *, alpha: float = ALPHA, method: str = "hedged",
                        grid: int = GRID) -> SequenceInterval:
    """Where the sequence is after the observations x (in the order they came): [0, 1] before any."""
    values = _check(x, alpha, method)
    state = _state(alpha, method, grid)
    _feed(state, values)
    mean = float(values.mean()) if values.size else None
    return SequenceInterval(int(values.size), mean, state.last[0], state.last[1], method, alpha)


def first_reached(x: Sequence[float], target: float, *, alpha: float = ALPHA, method: str = "hedged",
                  grid: int = GRID) -> int | None:
    """The first n at which the half-width is at most ``target`` (None: not within these observations); the
    observations after it are not looked at."""
    import numpy as np

    values = _check(x, alpha, method)
    state = _state(alpha, method, grid)
    start, size = 0, FIRST_CHUNK
    while start < values.size:
        lows, highs = state.add(values[start:start + size])
        reached = np.flatnonzero((highs - lows) / 2 <= target)
        if reached.size:
            return start + int(reached[0]) + 1
        start, size = start + size, min(2 * size, CHUNK)
    return None


def more_needed(x: Sequence[float], target: float, *, alpha: float = ALPHA, method: str = "hedged",
                grid: int = GRID, limit: int = MAX_MORE) -> int | None:
    """How many more observations bring the half-width to ``target`` or below if they keep the current mean
    (0 when it is there already; None when more than ``limit`` would be needed)."""
    import numpy as np

    if not 0 < target < 0.5:
        raise ValueError("the target half-width is between 0 and 0.5")
    values = _check(x, alpha, method)
    state = _state(alpha, method, grid)
    _feed(state, values)
    if (state.last[1] - state.last[0]) / 2 <= target:
        return 0
    # The continuation: 0s and 1s whose running share follows the mean so far (1/2 before any observation).
    share = (float(values.sum()) + 0.5) / (values.size + 1)
    start, size = 0, FIRST_CHUNK
    while start < limit:
        more = np.arange(start + 1, min(start + size, limit) + 1)
        start, size = start + size, min(2 * size, CHUNK)
        lows, highs = state.add(np.floor(more * share + 0.5) - np.floor((more - 1) * share + 0.5))
        reached = np.flatnonzero((highs - lows) / 2 <= target)
        if reached.size:
            return int(more[reached[0]])
    return None
