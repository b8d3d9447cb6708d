"""evaluation.statistics.irt: the item-response fit recovers known parameters from simulated answers (issue 21,
point 3: 1,000 respondents x 250 items, correlation >= 0.95 with the true abilities and difficulties), chooses
Rasch when items have few answers, gives intervals that cover, and finds the items that are harder for one group.
Each test prints its figures."""
import time

import numpy as np
import pytest

from evaluation.statistics.irt import MIN_ANSWERS_2PL, fit, group_difficulties


def _simulate(seed: int, respondents: int = 1000, items: int = 250, per_respondent: int | None = None):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, respondents)
    b = rng.normal(0, 1, items)
    a = np.exp(rng.normal(0, 0.3, items))
    if per_respondent is None:
        r, j = (m.ravel() for m in np.meshgrid(np.arange(respondents), np.arange(items), indexing="ij"))
    else:
        r = np.repeat(np.arange(respondents), per_respondent)
        j = np.concatenate([rng.choice(items, per_respondent, replace=False) for _ in range(respondents)])
    y = rng.random(r.size) < 1 / (1 + np.exp(-a[j] * (theta[r] - b[j])))
    return theta, b, a, r, j, y


def _coverage(estimate, se, truth) -> float:
    estimate, se = np.asarray(estimate), np.asarray(se)
    return float(np.mean(np.abs(estimate - truth) <= 1.96 * se))


def test_2pl_recovers_1000_respondents_by_250_items():
    theta, b, a, r, j, y = _simulate(2024)
    started = time.perf_counter()
    fitted = fit(r, j, y, n_respondents=1000, n_items=250)
    seconds = time.perf_counter() - started
    r_theta = np.corrcoef(fitted.ability, theta)[0, 1]
    r_b = np.corrcoef(fitted.difficulty, b)[0, 1]
    r_a = np.corrcoef(fitted.discrimination, a)[0, 1]
    cover_theta = _coverage(fitted.ability, fitted.ability_se, theta)
    cover_b = _coverage(fitted.difficulty, fitted.difficulty_se, b)
    print(f"\n{fitted.model} on 1,000 x 250 ({fitted.answers} answers) in {seconds:.1f} s, {fitted.iterations} "
          f"iterations: r(ability) = {r_theta:.4f}, r(difficulty) = {r_b:.4f}, r(discrimination) = {r_a:.4f}; "
          f"95% intervals cover {cover_theta:.1%} of abilities and {cover_b:.1%} of difficulties")
    assert fitted.model == "2PL" and fitted.converged
    assert r_theta >= 0.95 and r_b >= 0.95 and r_a >= 0.9
    # One scale: N(0, 1) abilities come back with about unit spread, not shrunk or stretched.
    assert np.polyfit(theta, fitted.ability, 1)[0] == pytest.approx(1.0, abs=0.1)
    assert 0.9 <= cover_theta <= 0.98 and 0.8 <= cover_b <= 0.99
    assert seconds < 25


def test_thin_data_get_rasch_and_respondents_with_few_answers_wide_intervals():
    # Like a study: each respondent answers 15 of 250 items, so an item has about 60 answers.
    theta, b, a, r, j, y = _simulate(7, respondents=1000, items=250, per_respondent=15)
    fitted = fit(r, j, y, n_respondents=1000, n_items=250)
    r_theta, r_b = np.corrcoef(fitted.ability, theta)[0, 1], np.corrcoef(fitted.difficulty, b)[0, 1]
    cover = _coverage(fitted.ability, fitted.ability_se, theta)
    print(f"\n{fitted.model} ({fitted.reason}): r(ability) = {r_theta:.3f}, r(difficulty) = {r_b:.3f}, "
          f"interval coverage {cover:.1%}, mean ability SE {np.mean(fitted.ability_se):.2f}")
    assert fitted.model == "Rasch" and str(MIN_ANSWERS_2PL) in fitted.reason
    assert len(set(fitted.discrimination)) == 1 and fitted.discrimination_se == [None] * 250
    assert r_theta > 0.75 and r_b > 0.9 and 0.9 <= cover <= 0.99
    assert np.mean(fitted.ability_se) > 0.4  # 15 answers say little about a respondent
    assert fit(r, j, y, n_respondents=1000, n_items=250, model="2pl").model == "2PL"


def test_everything_right_or_wrong_stays_finite_and_ordered():
    # Three respondents: all wrong, half right, all right, on 20 items; an item nobody got right.
    r = np.repeat(np.arange(3), 20)
    j = np.tile(np.arange(20), 3)
    y = np.concatenate([np.zeros(20), np.arange(20) % 2 == 0, np.ones(20)]).astype(bool)
    y[[20, 40]] = False  # item 0 is wrong for everyone
    fitted = fit(r, j, y, n_respondents=3, n_items=20)
    assert fitted.model == "Rasch" and all(np.isfinite(fitted.ability)) and all(np.isfinite(fitted.difficulty))
    assert fitted.ability[0] < fitted.ability[1] < fitted.ability[2]
    assert fitted.difficulty[0] > max(fitted.difficulty[1:])
    low, high = fitted.ability_interval(2)
    assert low < fitted.ability[2] < high
    with pytest.raises(ValueError):
        fit([0], [5], [True], n_respondents=1, n_items=2)


def test_group_difficulties_find_the_items_harder_for_one_group():
    rng = np.random.default_rng(5)
    people, models, items = 600, 40, 120
    theta = rng.normal(0, 1, people + models)
    b = rng.normal(0, 1, items)
    shift = np.zeros(items)
    shift[:10], shift[10:20] = 2.0, -2.0  # items 0-9 harder for people, 10-19 harder for models
    r, j = (m.ravel() for m in np.meshgrid(np.arange(people + models), np.arange(items), indexing="ij"))
    is_person = r < people
    y = rng.random(r.size) < 1 / (1 + np.exp(-(theta[r] - b[j] - np.where(is_person, shift[j] / 2, -shift[j] / 2))))
    fitted = fit(r, j, y, n_respondents=people + models, n_items=items)
    human, model = group_difficulties(fitted, r, j, y, np.arange(people + models) < people)
    gap = np.array([(h.difficulty - m.difficulty) / np.hypot(h.se, m.se) for h, m in zip(human, model)])
    top, bottom = set(np.argsort(-gap)[:10]), set(np.argsort(gap)[:10])
    print(f"\nharder for people found {len(top & set(range(10)))}/10, harder for models "
          f"{len(bottom & set(range(10, 20)))}/10")
    assert len(top & set(range(10))) >= 8 and len(bottom & set(range(10, 20))) >= 8
    assert human[0].answers == people and model[0].answers == models
