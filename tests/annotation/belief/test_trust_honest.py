"""The trust page at small n (issue 18): plain counts first, an estimate only where it is defined (and
otherwise how many more uniform reviews it needs), no 0.000 standing for "not enough data", no weighted
estimate without a uniform sample, kappa's interval inside [-1, 1], and n counting labels with k reviewers."""
import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation import trust
from annotation.models import BeliefLabel
from annotation.selectors.belief import triage_basis
from annotation.selectors.belief_trust import belief_trust
from annotation.services.belief import belief_labels_record, belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit

from .support import free_text_row, record_free_text

pytestmark = pytest.mark.django_db


def _labels(queue, items, n: int) -> list[BeliefLabel]:
    """n labels with distinct beliefs; the least believed have the largest audit keys, so the order stream
    and the random stream never draw the same labels."""
    beliefs = [round(0.5 + 0.4 * i / n, 4) for i in range(n)]
    record_free_text(queue, items, beliefs)
    labels = list(BeliefLabel.objects.filter(queue=queue).order_by("belief"))
    for label in labels:
        BeliefLabel.objects.filter(pk=label.pk).update(audit_key=round(1 - label.belief, 6))
    return labels


def _review(queue, user, count: int, disagree_at=()) -> list[str]:
    """Review `count` hand-outs; the hand-outs numbered in `disagree_at` (from 1) disagree with the judge."""
    streams = []
    for number in range(1, count + 1):
        lease = belief_lease_next(queue_id=queue.pk, user=user)
        label = lease.label
        human = ("incorrect" if label.label == "correct" else "correct") if number in disagree_at else label.label
        belief_review_submit(lease_id=lease.pk, user=user, human_label=human)
        streams.append(lease.stream)
    return streams


def _page(researcher, queue) -> str:
    client = Client()
    client.force_login(researcher)
    response = client.get(reverse("annotation:belief_trust", args=[queue.name]))
    assert response.status_code == 200
    return response.content.decode()


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_eight_reviews_six_agreeing_show_the_counts_and_no_estimate(queue, items, annotator, researcher):
    """The issue's page: triage with a random share of 20%, 8 reviews, 6 agreeing, the one uniform draw
    disagreeing. It showed "Accuracy 0.000 … n = 1", weighted "0.033 … n_eff = 1.1", kappa "[0.000, 0.000]"."""
    _labels(queue, items, 20)
    streams = _review(queue, annotator, 8, disagree_at=(2, 5))
    assert streams.count("random") == 1 and streams[4] == "random"
    page = _page(researcher, queue)
    text = _text(page)
    assert "6 of 8 reviews agree with the judge; 1 of them in the uniform sample, 0 of which agree." in text
    # No figure stands for missing data: every estimate cell is empty, with no data-value.
    for name in ("accuracy", "kappa", "ece", "brier", "above_threshold"):
        for side in ("uniform", "weighted"):
            assert re.search(rf'id="{name}-{side}" data-value=""', page), (name, side)
    table = _text(page[page.index('id="trust-figures"'):page.index('id="reliability"')])
    assert "0.000" not in table and "0.033" not in table
    # The reliability bins give a bin below the minimum as a count, not as a share: "0 of 1", not 0.000.
    bins = _text(page[page.index('id="reliability-bins"'):page.index('id="coverage"')])
    assert "0.8–0.9 1 0.880 0 of 1" in bins and "0.000" not in bins
    assert ("Uniform sample: The uniform sample has 1 reviewed label(s); an estimate needs 10: 9 more uniform "
            "review(s). At a random share of 20%, that is about 45 more hand-out(s).") in text
    assert re.search(r"All reviews, weighted: The 8 reviewed label\(s\) count as \d\.\d once weighted .* an estimate "
                     r"needs 10: about 9 more uniform review\(s\)\.", text)
    figures = belief_trust(queue=queue)
    assert figures["counts"] == {"reviews": 8, "agree": 6, "labels": 8, "uniform_reviews": 1, "uniform_agree": 0,
                                 "uniform_labels": 1}
    assert figures["uniform"]["accuracy"]["value"] is None and figures["weighted"]["accuracy"]["value"] is None


def test_from_ten_uniform_labels_the_estimate_is_there_with_its_interval_and_n(queue, items, annotator,
                                                                                researcher):
    belief_queue_policy_set(queue_id=queue.pk, order="audit")
    _labels(queue, items, 12)
    _review(queue, annotator, 10, disagree_at=(3,))
    page = _page(researcher, queue)
    value = float(re.search(r'id="accuracy-uniform" data-value="([^"]+)"', page).group(1))
    assert value == pytest.approx(0.9)
    assert re.search(r'id="accuracy-uniform"[^>]*>0\.900 <span class="muted">\[0\.\d{3}, 0\.\d{3}\]</span> '
                     r'<span class="muted">n = 10</span>', page)
    assert 'id="missing-uniform"' not in page
    # Kappa: the judge said "correct" to every label: no kappa, and the reason, not "0.000 [0.000, 0.000]".
    figures = belief_trust(queue=queue)
    assert figures["uniform"]["kappa"]["value"] is None
    assert "the judge gave one label (correct)" in figures["uniform"]["kappa"]["reason"]
    assert "the judge gave one label (correct)" in _text(page)


def test_a_random_share_of_zero_gives_no_weighted_estimate_and_says_why(queue, items, annotator, researcher):
    belief_queue_policy_set(queue_id=queue.pk, random_share=0.0)
    _labels(queue, items, 30)
    streams = _review(queue, annotator, 12, disagree_at=(4,))
    assert set(streams) == {"order"}
    figures = belief_trust(queue=queue)
    weighted = figures["weighted"]
    assert weighted["n"] == 12 and not weighted["defined"]
    assert weighted["accuracy"]["value"] is None  # not the naive 11/12 passed off as "weighted"
    assert "no label has been drawn at random yet, so 18 scored label(s) had no chance of review" in weighted["reason"]
    text = _text(_page(researcher, queue))
    assert "No weighted estimate: no label has been drawn at random yet" in text
    assert "The random share is 0, so none will come in triage order" in text
    assert "0 in triage order gives no uniform sample, so no unbiased estimate" in text  # so does the policy form


def test_with_two_reviewers_per_label_n_counts_labels(queue, items, annotator, annotator2, researcher):
    belief_queue_policy_set(queue_id=queue.pk, order="audit", reviewers_per_label=2)
    _labels(queue, items, 10)
    for _ in range(10):
        for user in (annotator, annotator2):
            lease = belief_lease_next(queue_id=queue.pk, user=user)
            belief_review_submit(lease_id=lease.pk, user=user, human_label=lease.label.label)
    figures = belief_trust(queue=queue)
    assert figures["counts"]["reviews"] == 20 and figures["counts"]["labels"] == 10
    assert figures["uniform"]["n"] == 10 and figures["uniform"]["n_reviews"] == 20
    assert figures["uniform"]["accuracy"]["n"] == 10 and figures["uniform"]["accuracy"]["value"] == 1.0
    assert figures["weighted"]["n"] == 10 and figures["weighted"]["n_eff"] == pytest.approx(10)
    text = _text(_page(researcher, queue))
    assert "They are reviews of 10 label(s), 10 of them in the uniform sample; every n below counts labels." in text
    assert trust.MIN_LABELS == 10


def test_triage_says_when_it_has_nothing_to_order_by(queue, items, annotator, researcher):
    record_free_text(queue, items, [0.9] * 4)
    basis = triage_basis(queue=queue)
    assert basis["nothing_to_order_by"] and basis["pending"] == 4
    assert basis["note"] == ("All 4 label(s) awaiting review have the judge's belief 0.90: triage has nothing to "
                             "order by, so they come in random order.")
    client = Client()
    client.force_login(annotator)
    assert basis["note"] in _text(client.get(reverse("annotation:belief_queues")).content.decode())
    assert basis["note"] in _text(_page(researcher, queue))
    # Labels without a belief go first; the note says so, and that the rest are ordered.
    belief_labels_record(queue=queue, rows=[free_text_row(items[0], 50 + i, belief=None, status="unscored")
                                            for i in range(2)])
    record_free_text(queue, items, [0.6], start=60)
    basis = triage_basis(queue=queue)
    assert not basis["nothing_to_order_by"] and basis["no_belief"] == 2
    assert basis["note"].startswith("2 of the 7 label(s) awaiting review have no belief from the judge")
    # Audit order is random by design: no note.
    belief_queue_policy_set(queue_id=queue.pk, order="audit")
    queue.refresh_from_db()
    assert triage_basis(queue=queue)["note"] == ""


def test_a_second_run_graded_into_the_queue_is_not_taken_as_reviewed(queue, items, annotator, researcher):
    """Issue 21: when a judge grades a second run into a queue whose reviewing has begun, its labels below the
    order stream's frontier were given inclusion probability 1, never handed out as they were; the weighted
    figures did not move. Each label's frontier is over the hand-outs made since it was added."""
    record_free_text(queue, items, [round(0.30 + 0.6 * i / 40, 4) for i in range(40)])
    _review(queue, annotator, 30)
    before = belief_trust(queue=queue)
    assert "no chance of review" not in before["weighted"]["reason"]  # every label had its chance
    k_star = before["k_star"]
    # The second run: 20 labels, every belief below the frontier of the order stream, none handed out yet.
    record_free_text(queue, items, [0.05 + 0.01 * i for i in range(20)], start=100)
    late = BeliefLabel.objects.filter(queue=queue, target__in=[f"result:{100 + i}" for i in range(20)])
    assert all((label.belief, label.audit_key) < k_star for label in late)
    figures = belief_trust(queue=queue)
    weighted = figures["weighted"]
    assert not weighted["defined"] and weighted["accuracy"]["value"] is None  # the figures moved: refused
    assert ("no label has been drawn at random since 20 scored label(s) were added, so they had no chance of "
            "review yet") in weighted["reason"]
    # Reviewing goes on: triage takes the new labels first, the random share draws among all that are left.
    _review(queue, annotator, 10)
    figures = belief_trust(queue=queue)
    rows = {r["label_id"]: r for r in figures["rows"]}
    for label in late:
        label.refresh_from_db()
        if label.first_stream == "order":
            assert rows[label.pk]["inclusion_probability"] == 1.0
    # Every label has had its chance now: no refusal (an estimate may still wait for enough effective labels, the
    # late labels drawn at random weighing one over their own small u*).
    assert "no chance of review" not in figures["weighted"]["reason"]
    assert all(r["inclusion_probability"] > 0 for r in figures["rows"])
