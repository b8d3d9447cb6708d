"""A review round of 100 labels: the figures on the trust page equal the same figures computed
here independently from the stored rows (scikit-learn / numpy on the label and review tables)."""
import random
import re

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from scipy.stats import norm
from sklearn.metrics import cohen_kappa_score

from annotation.models import BeliefLabel, BeliefReview
from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from annotation.trust import MIN_LABELS

from .support import record_free_text

pytestmark = pytest.mark.django_db
THRESHOLD = 0.8


def _round(queue, items, annotator, *, n_labels: int, n_reviews: int, seed: int = 3):
    rng = random.Random(seed)
    beliefs = [round(rng.uniform(0.5, 1.0), 4) for _ in range(n_labels)]
    labels = [rng.choice(["correct", "incorrect"]) for _ in range(n_labels)]
    record_free_text(queue, items, beliefs, labels=labels)
    for _ in range(n_reviews):
        lease = belief_lease_next(queue_id=queue.pk, user=annotator)
        judge = lease.label
        # People agree with the judge with a chance equal to its belief (a calibrated judge).
        agree = rng.random() < judge.belief
        human = judge.label if agree else ("incorrect" if judge.label == "correct" else "correct")
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=human)


def _page_values(researcher, queue) -> dict[str, float]:
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("annotation:belief_trust", args=[queue.name])).content.decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r'id="([a-z_]+-(?:uniform|weighted))" data-value="([^"]+)"',
                                                               page)}


def _stored():
    rows = []
    for review in BeliefReview.objects.select_related("label"):
        label = review.label
        rows.append({"judge": label.label, "human": review.human_label, "belief": label.belief,
                     "agree": float(label.label == review.human_label), "u": label.audit_key,
                     "stream": label.first_stream})
    return rows


def _ece(beliefs, agree, weights):
    """The debiased ECE (issue 21), recomputed: per bin the weighted gap d between agreement and belief, its
    Hajek variance s^2, and 2|d| - E|N(d, s^2)|; clipped at 0."""
    beliefs, agree, weights = map(np.asarray, (beliefs, agree, weights))
    bins = np.minimum(np.floor(np.round(beliefs * 10, 9)).astype(int), 9)
    total = 0.0
    for b in range(10):
        mask = bins == b
        if mask.any():
            w, x = weights[mask], agree[mask] - beliefs[mask]
            d = (w * x).sum() / w.sum()
            k = mask.sum()
            if k > 1:
                s = np.sqrt((w ** 2 * (x - d) ** 2).sum() / w.sum() ** 2 * k / (k - 1))
            else:
                s = np.sqrt((w ** 2 * beliefs[mask] * (1 - beliefs[mask])).sum() / w.sum() ** 2)
            folded = s * np.sqrt(2 / np.pi) * np.exp(-d * d / (2 * s * s)) + d * (1 - 2 * norm.cdf(-d / s)) if s > 0 \
                else abs(d)
            total += w.sum() / weights.sum() * (2 * abs(d) - folded)
    return max(0.0, total)


def _expected(rows, weights):
    judge = [r["judge"] for r in rows]
    human = [r["human"] for r in rows]
    beliefs = np.array([r["belief"] for r in rows])
    agree = np.array([r["agree"] for r in rows])
    w = np.asarray(weights, dtype=float)
    above = beliefs >= THRESHOLD
    return {
        "accuracy": float((w * agree).sum() / w.sum()),
        "kappa": float(cohen_kappa_score(judge, human, sample_weight=w)),
        "ece": _ece(beliefs, agree, w),
        "brier": float((w * (beliefs - agree) ** 2).sum() / w.sum()),
        "above_threshold": float((w[above] * agree[above]).sum() / w[above].sum()),
    }


def test_audit_round_of_100_labels(queue, items, annotator, researcher):
    belief_queue_policy_set(queue_id=queue.pk, order="audit", accept_threshold=THRESHOLD)
    _round(queue, items, annotator, n_labels=100, n_reviews=100)
    rows = _stored()
    assert len(rows) == 100
    expected = _expected(rows, [1.0] * 100)
    shown = _page_values(researcher, queue)
    for name, value in expected.items():
        assert shown[f"{name}-uniform"] == pytest.approx(value, abs=1e-12), name
        assert shown[f"{name}-weighted"] == pytest.approx(value, abs=1e-12), name
    scored = BeliefLabel.objects.filter(queue=queue).values_list("belief", flat=True)
    assert shown["coverage_above_threshold-uniform"] == pytest.approx(sum(b >= THRESHOLD for b in scored) / 100)


def test_triage_round_weighted_and_uniform_estimates(queue, items, annotator, researcher):
    belief_queue_policy_set(queue_id=queue.pk, order="triage", random_share=0.2, accept_threshold=THRESHOLD)
    _round(queue, items, annotator, n_labels=160, n_reviews=100)
    rows = _stored()
    assert sum(r["stream"] == "random" for r in rows) == 20
    u_star = max(r["u"] for r in rows if r["stream"] == "random")
    k_star = max((r["belief"], r["u"]) for r in rows if r["stream"] == "order")
    pi = [1.0 if (r["belief"], r["u"]) <= k_star else u_star for r in rows]
    shown = _page_values(researcher, queue)
    weighted = _expected(rows, [1 / p for p in pi])
    # The share above the threshold rests on the labels above it only: with too few of them once weighted (Kish's
    # n_eff below trust.MIN_LABELS, which depends on the round's draws) the page gives no estimate, not a number.
    above = [1 / p for p, r in zip(pi, rows) if r["belief"] >= THRESHOLD]
    if sum(above) ** 2 / sum(w * w for w in above) < MIN_LABELS - 1e-9:
        assert "above_threshold-weighted" not in shown
        weighted.pop("above_threshold")
    for name, value in weighted.items():
        assert shown[f"{name}-weighted"] == pytest.approx(value, abs=1e-12), name
    uniform_rows = [r for r in rows if r["u"] <= u_star]
    assert len(uniform_rows) >= 20
    uniform = _expected(uniform_rows, [1.0] * len(uniform_rows))
    if sum(r["belief"] >= THRESHOLD for r in uniform_rows) < MIN_LABELS:  # the same rule, unweighted
        assert "above_threshold-uniform" not in shown
        uniform.pop("above_threshold")
    for name, value in uniform.items():
        assert shown[f"{name}-uniform"] == pytest.approx(value, abs=1e-12), name
    # Lowest belief first: the order stream's labels are the least believed ones.
    reviewed_order = [r["belief"] for r in rows if r["stream"] == "order"]
    untouched = BeliefLabel.objects.filter(queue=queue, first_stream="").values_list("belief", flat=True)
    assert max(reviewed_order) <= min(untouched)
