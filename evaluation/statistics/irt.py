"""One scale for people and models: a 2PL (or Rasch) item-response model fitted to right/wrong answers (no Django
inside; numpy and scipy only, imported where used).

The model: respondent i (a study participant, or a model run) answers item j (an item at one content version)
right with probability ``sigmoid(a_j * (theta_i - b_j))``: ``theta`` the ability, ``b`` the difficulty on the
same scale, ``a`` the discrimination.

**Estimation**: marginal maximum likelihood (Bock-Aitkin) with weak priors on the item parameters (Bayes modal
estimation, as BILOG does): the abilities are integrated out over the population ``theta ~ N(0, 1)`` on a fixed
grid of :data:`NODES` points in [-5, 5], and the item parameters maximise the marginal likelihood times
``b ~ N(0, 2**2)`` and ``log a ~ N(0, 0.5**2)`` (the regularisation: an item everyone got right keeps a finite
difficulty, a discrimination stays positive and near 1 unless the answers say otherwise), by L-BFGS-B with the
exact gradient (Fisher's identity: the expected complete-data gradient under each respondent's posterior). The
N(0, 1) population fixes the scale's origin and unit, so abilities of people and models are read on one scale.
Unlike joint maximum likelihood, the item estimates are consistent as respondents grow and a respondent who got
everything right still has a finite ability.

**Which model** (``model="auto"``): the 2PL when the median item has at least :data:`MIN_ANSWERS_2PL` answers,
else Rasch. A discrimination is a slope fitted from one item's answers; with a few dozen of them it is mostly
noise (the usual advice for the 2PL is a few hundred respondents), while Rasch needs only the difficulties.
In this app an item is answered by its three study raters and each model run, so real data are usually thin;
the simulated 1,000 x 250 data are not. Rasch here is the same model with **one discrimination shared by every
item** (estimated: it is the spread of the abilities once the population is N(0, 1), equivalent to Rasch's
a = 1 with a free population variance), so both models report on the same N(0, 1) scale.
``fit(..., model="2pl"|"rasch")`` forces one.

**Intervals**: a respondent's ability is its posterior mean (EAP) and its standard error the posterior standard
deviation, so the 95% interval is +-1.96 SE (a respondent with few answers gets a wide one). An item's standard
errors come from its complete-data Fisher information (the expected counts at the grid points, prior
included): a little narrower than the marginal information.

:func:`group_difficulties`: each item's difficulty for one group of respondents only (people, models) with
the abilities (EAP) and discriminations held, the mode under the prior N(fitted difficulty, 1): items much
harder for people than for models (and the reverse) are those whose two group difficulties differ most for
their standard errors.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from foundation.words import gettext

MIN_ANSWERS_2PL = 100
DIFFICULTY_SD, LOG_SLOPE_SD = 2.0, 0.5
NODES = 41
Z95 = 1.959963984540054
GROUP_PRIOR_SD = 1.0


@dataclass(frozen=True)
class IrtFit:
    """Estimates in the order of the respondent and item indices given to :func:`fit`."""

    model: str  # "2PL" or "Rasch"
    reason: str  # why this model
    ability: list[float]
    ability_se: list[float]
    difficulty: list[float]
    difficulty_se: list[float]
    discrimination: list[float]
    discrimination_se: list[float | None]  # None under Rasch (one discrimination shared by every item)
    respondent_answers: list[int]
    item_answers: list[int]
    log_likelihood: float  # marginal
    converged: bool
    iterations: int

    def ability_interval(self, i: int) -> tuple[float, float]:
        return self.ability[i] - Z95 * self.ability_se[i], self.ability[i] + Z95 * self.ability_se[i]

    @property
    def answers(self) -> int:
        return sum(self.item_answers)


def choose_model(item_answers: Sequence[int], model: str = "auto") -> tuple[str, str]:
    """("2PL" or "Rasch", why: in the active language, so a fit kept in a cache says it again with this)."""
    import numpy as np

    if model == "2pl":
        return "2PL", gettext("asked for")
    if model == "rasch":
        return "Rasch", gettext("asked for")
    if model != "auto":
        raise ValueError(f"model {model!r}; choose auto, 2pl or rasch")
    median = float(np.median(item_answers)) if len(item_answers) else 0.0
    if median >= MIN_ANSWERS_2PL:
        return "2PL", gettext("the median item has %(n)s answers (at least %(least)s: discriminations can be fitted)",
                              n=f"{median:g}", least=MIN_ANSWERS_2PL)
    return "Rasch", gettext("the median item has %(n)s answers (fewer than %(least)s: too few to fit a discrimination "
                            "per item, so every item shares one)", n=f"{median:g}", least=MIN_ANSWERS_2PL)


def _arrays(respondent, item, correct, n_respondents, n_items):
    import numpy as np

    r = np.asarray(respondent, dtype=np.int64)
    j = np.asarray(item, dtype=np.int64)
    y = np.asarray(correct, dtype=float)
    if not (r.shape == j.shape == y.shape) or r.ndim != 1:
        raise ValueError("respondent, item and correct must be 1-d and of one length")
    if r.size and (r.min() < 0 or r.max() >= n_respondents or j.min() < 0 or j.max() >= n_items):
        raise ValueError("an index is out of range")
    return r, j, y


def _sparse(r, j, y, n_respondents, n_items):
    """(answers right, answers wrong) as respondent x item count matrices: sparse, or dense (BLAS is many times
    faster) when most respondents answered most items."""
    import numpy as np
    from scipy.sparse import csr_matrix

    right = y > 0.5
    shape = (n_respondents, n_items)
    ones = np.ones(int(right.sum()))
    y1 = csr_matrix((ones, (r[right], j[right])), shape=shape)
    y0 = csr_matrix((np.ones(int((~right).sum())), (r[~right], j[~right])), shape=shape)
    if r.size > 0.2 * n_respondents * n_items:
        return y1.toarray(), y0.toarray()
    return y1, y0


def fit(respondent: Sequence[int], item: Sequence[int], correct: Sequence[bool], *, n_respondents: int,
        n_items: int, model: str = "auto", max_iterations: int = 500) -> IrtFit:
    """Fit the model to answers (respondent index, item index, right) by marginal maximum likelihood."""
    import numpy as np
    from scipy.optimize import minimize
    from scipy.special import expit, logsumexp

    r, j, y = _arrays(respondent, item, correct, n_respondents, n_items)
    per_item = np.bincount(j, minlength=n_items)
    per_respondent = np.bincount(r, minlength=n_respondents)
    name, reason = choose_model(per_item.tolist(), model)
    slopes = n_items if name == "2PL" else 1
    y1, y0 = _sparse(r, j, y, n_respondents, n_items)
    answered = (y1 + y0).T
    y1_t = y1.T
    if not isinstance(y1_t, np.ndarray):
        answered, y1_t = answered.tocsr(), y1_t.tocsr()
    nodes = np.linspace(-5.0, 5.0, NODES)
    log_weight = -0.5 * nodes ** 2
    log_weight -= logsumexp(log_weight)

    def posterior(x):
        b, a = x[:n_items], np.broadcast_to(np.exp(x[n_items:]), (n_items,))
        z = a[:, None] * (nodes[None, :] - b[:, None])  # item x node
        log_l = y1 @ -np.logaddexp(0.0, -z) + y0 @ -np.logaddexp(0.0, z) + log_weight  # respondent x node
        marginal = logsumexp(log_l, axis=1)
        return b, a, z, marginal, np.exp(log_l - marginal[:, None])

    def objective(x):
        b, a, z, marginal, w = posterior(x)
        log_a = x[n_items:]
        # d log L / d z[j, q] = expected right - expected answers * p at node q (Fisher's identity)
        g = y1_t @ w - (answered @ w) * expit(z)
        nll = -float(marginal.sum()) + 0.5 * float(b @ b) / DIFFICULTY_SD ** 2 \
            + 0.5 * float(log_a @ log_a) / LOG_SLOPE_SD ** 2
        grad_b = (g * a[:, None]).sum(axis=1) + b / DIFFICULTY_SD ** 2
        grad_log_a = -(g * z).sum(axis=1)
        if slopes == 1:
            grad_log_a = np.array([grad_log_a.sum()])
        return nll, np.concatenate([grad_b, grad_log_a + log_a / LOG_SLOPE_SD ** 2])

    share = (np.bincount(j, y, minlength=n_items) + 1) / (per_item + 2)
    start = np.concatenate([-np.log(share / (1 - share)) / 1.7, np.zeros(slopes)])
    result = minimize(objective, start, jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iterations, "maxcor": 20, "gtol": 1e-5, "ftol": 1e-11})
    b, a, z, marginal, w = posterior(result.x)
    ability = w @ nodes
    ability_se = np.sqrt(np.maximum(w @ nodes ** 2 - ability ** 2, 0.0))
    expected = answered @ w  # item x node: expected answers at each ability
    info = expected * expit(z) * expit(-z)
    i_bb = (info * a[:, None] ** 2).sum(axis=1) + 1.0 / DIFFICULTY_SD ** 2
    if slopes > 1:  # the 2 x 2 information of (b, log a) per item, inverted
        i_aa = (info * z ** 2).sum(axis=1) + 1.0 / LOG_SLOPE_SD ** 2
        i_ab = -(info * z * a[:, None]).sum(axis=1)
        det = i_bb * i_aa - i_ab ** 2
        se_b = np.sqrt(i_aa / det)
        se_a: list[float | None] = (a * np.sqrt(i_bb / det)).tolist()
    else:
        se_b = 1.0 / np.sqrt(i_bb)
        se_a = [None] * n_items
    return IrtFit(model=name, reason=reason, ability=ability.tolist(), ability_se=ability_se.tolist(),
                  difficulty=b.tolist(), difficulty_se=se_b.tolist(), discrimination=np.asarray(a, float).tolist(),
                  discrimination_se=se_a, respondent_answers=per_respondent.tolist(), item_answers=per_item.tolist(),
                  log_likelihood=float(marginal.sum()), converged=bool(result.success), iterations=int(result.nit))


@dataclass(frozen=True)
class GroupDifficulty:
    """One item's difficulty for one group (None: the group did not answer it)."""

    difficulty: float | None
    se: float | None
    answers: int
    correct: int


def group_difficulties(fitted: IrtFit, respondent: Sequence[int], item: Sequence[int], correct: Sequence[bool],
                       group: Sequence[bool]) -> tuple[list[GroupDifficulty], list[GroupDifficulty]]:
    """Each item's difficulty for the respondents with ``group[i]`` true and for the others, abilities and
    discriminations held at their fitted values: per item and group the mode of its answers' likelihood
    under the prior N(fitted difficulty, 1) (Newton's method, all items at once), with 1 / sqrt(information)
    as the standard error. Returns (in the group, the others)."""
    import numpy as np

    r, j, y = _arrays(respondent, item, correct, len(fitted.ability), len(fitted.difficulty))
    theta, b0, a = (np.asarray(v, dtype=float) for v in (fitted.ability, fitted.difficulty, fitted.discrimination))
    in_group = np.asarray(group, dtype=bool)[r]
    out = []
    for mask in (in_group, ~in_group):
        rr, jj, yy = r[mask], j[mask], y[mask]
        I = len(b0)
        answers = np.bincount(jj, minlength=I)
        right = np.bincount(jj, yy, minlength=I)
        b = b0.copy()
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(a[jj] * (theta[rr] - b[jj]))))
            gradient = np.bincount(jj, a[jj] * (p - yy), minlength=I) - (b - b0) / GROUP_PRIOR_SD ** 2
            information = np.bincount(jj, a[jj] ** 2 * p * (1 - p), minlength=I) + 1.0 / GROUP_PRIOR_SD ** 2
            step = np.clip(gradient / information, -1.0, 1.0)
            b = b + step
            if np.max(np.abs(step)) < 1e-8:
                break
        p = 1.0 / (1.0 + np.exp(-(a[jj] * (theta[rr] - b[jj]))))
        se = 1.0 / np.sqrt(np.bincount(jj, a[jj] ** 2 * p * (1 - p), minlength=I) + 1.0 / GROUP_PRIOR_SD ** 2)
        out.append([GroupDifficulty(difficulty=float(b[k]) if answers[k] else None,
                                    se=float(se[k]) if answers[k] else None, answers=int(answers[k]),
                                    correct=int(right[k])) for k in range(I)])
    return out[0], out[1]
