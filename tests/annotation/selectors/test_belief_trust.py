"""The trust figures of a queue (annotation.selectors.belief_trust).

At small n (issue 18): plain counts first, an estimate only where it is defined (and otherwise how many more uniform
reviews it needs), no 0.000 standing for "not enough data", no weighted estimate without a uniform sample, kappa's
interval inside [-1, 1], and n counting labels with k reviewers.

A screening queue (issue 21): its labels answer six questions (Table 7's five criteria and the keep decision), so
kappa is given per criterion, each with its n and its interval inside [-1, 1], and no pooled kappa: pooling six
2-label questions into one table measures that people pick from the same two labels as the judge, not that they
agree with it.

Judge-powered estimates on the trust page and in its API (issue 21, point 1): beside the judge alone and people
alone, each with its n, equal to annotation.ppi recomputed from the stored labels, reviews and hand-outs."""
import random
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation import ppi, trust
from annotation.models import BeliefLabel, BeliefReview
from annotation.screening import SCREENING_CRITERIA
from annotation.selectors.belief_trust import belief_trust, design
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from tests.annotation.belief_support import record_free_text, screening_rows, trust_page, words
from tests.annotation.workflow_support import make_items

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


def test_eight_reviews_six_agreeing_show_the_counts_and_no_estimate(queue, items, annotator, researcher):
    """The issue's page: triage with a random share of 20%, 8 reviews, 6 agreeing, the one uniform draw
    disagreeing. It showed "Accuracy 0.000 … n = 1", weighted "0.033 … n_eff = 1.1", kappa "[0.000, 0.000]"."""
    _labels(queue, items, 20)
    streams = _review(queue, annotator, 8, disagree_at=(2, 5))
    assert streams.count("random") == 1 and streams[4] == "random"
    page = trust_page(researcher, queue)
    text = words(page)
    assert "6 of 8 reviews agree with the judge; 1 of them in the uniform sample, 0 of which agree." in text
    # No figure stands for missing data: every estimate cell is empty, with no data-value.
    for name in ("accuracy", "kappa", "ece", "brier", "above_threshold"):
        for side in ("uniform", "weighted"):
            assert re.search(rf'id="{name}-{side}" data-value=""', page), (name, side)
    table = words(page[page.index('id="trust-figures"'):page.index('id="reliability"')])
    assert "0.000" not in table and "0.033" not in table
    # The reliability bins give a bin below the minimum as a count, not as a share: "0 of 1", not 0.000.
    bins = words(page[page.index('id="reliability-bins"'):page.index('id="coverage"')])
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
    page = trust_page(researcher, queue)
    value = float(re.search(r'id="accuracy-uniform" data-value="([^"]+)"', page).group(1))
    assert value == pytest.approx(0.9)
    assert re.search(r'id="accuracy-uniform"[^>]*>0\.900 <span class="muted">\[0\.\d{3}, 0\.\d{3}\]</span> '
                     r'<span class="muted">n = 10</span>', page)
    assert 'id="missing-uniform"' not in page
    # Kappa: the judge said "correct" to every label: no kappa, and the reason, not "0.000 [0.000, 0.000]".
    figures = belief_trust(queue=queue)
    assert figures["uniform"]["kappa"]["value"] is None
    assert "the judge gave one label (correct)" in figures["uniform"]["kappa"]["reason"]
    assert "the judge gave one label (correct)" in words(page)


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
    text = words(trust_page(researcher, queue))
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
    text = words(trust_page(researcher, queue))
    assert "They are reviews of 10 label(s), 10 of them in the uniform sample; every n below counts labels." in text
    assert trust.MIN_LABELS == 10


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


ASPECTS = [*SCREENING_CRITERIA, "keep"]


def test_reviewers_answering_at_random_get_no_pooled_kappa_and_about_zero_per_criterion(annotator, researcher):
    rng = random.Random(5)
    queue = belief_queue_for(name="screen-trust", order="audit")
    items = make_items(20, source="s")
    for item in items:
        verdicts = {a: (rng.choice(["keep", "delete"] if a == "keep" else ["yes", "no"]), round(rng.random(), 3))
                    for a in ASPECTS}
        belief_labels_record(queue=queue, rows=screening_rows(item, verdicts))
    # The uniform order from the test's own generator too: with the audit keys the service draws (the process's random
    # state) the pairs of verdict and answer changed from run to run, and a criterion's kappa over 20 random pairs was
    # beyond 0.5 in about one run of six.
    for pk in BeliefLabel.objects.filter(queue=queue).order_by("pk").values_list("pk", flat=True):
        BeliefLabel.objects.filter(pk=pk).update(audit_key=rng.random())
    while (lease := belief_lease_next(queue_id=queue.pk, user=annotator)) is not None:
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=rng.choice(lease.label.choices))
    figures = belief_trust(queue=queue)
    assert figures["counts"]["reviews"] == 120
    for side in ("uniform", "weighted"):
        kappa = figures[side]["kappa"]
        assert kappa["value"] is None, (side, kappa)  # it was 0.46 [0.38, 0.54] pooled over six questions
        assert "6 questions" in kappa["reason"] and "per criterion" in kappa["reason"]
    by_aspect = {a["aspect"]: a for a in figures["by_aspect"]}
    assert sorted(by_aspect) == sorted(ASPECTS)
    for aspect, row in by_aspect.items():
        assert row["n"] == 20
        for side in ("uniform", "weighted"):
            kappa = row[side]["kappa"]
            assert kappa["n"] == 20 and -1 <= kappa["value"] <= 1, (aspect, kappa)
            assert (kappa["low"] is None and "rarer label" in kappa["reason"]
                    or -1 <= kappa["low"] <= kappa["value"] <= kappa["high"] <= 1), (aspect, kappa)
            assert abs(kappa["value"]) < 0.5
            assert row[side]["accuracy"]["low"] is not None
    # The share of items kept, three ways (every label reviewed here: the people's share, exactly).
    [kept] = figures["powered"]
    assert (kept["task"], kept["positive"], kept["n"]) == ("screening", "keep", 20)
    assert kept["powered"]["value"] == pytest.approx(kept["people"]["value"])
    assert kept["powered"]["n_reviewed"] == 20
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("annotation:belief_trust", args=[queue.name])).content.decode()
    assert 'id="kappa-uniform" data-value=""' in page
    section = page[page.index('id="by-criterion"'):]
    for aspect in ASPECTS:
        value = by_aspect[aspect]["uniform"]["kappa"]
        interval = (rf'<span class="muted">\[{value["low"]:.3f}, {value["high"]:.3f}\]</span> ' if value["low"] is not None
                    else r'<span class="muted reason">\([^<]*rarer label[^<]*\)</span> ')
        assert re.search(rf'id="kappa-{re.escape(aspect)}-uniform" data-value="[^"]+">{value["value"]:.3f} '
                         rf'{interval}<span class="muted">n = 20</span>', section), aspect


def test_the_trust_page_shows_the_judge_powered_share_beside_judge_and_people(queue, items, annotator, researcher):
    rng = random.Random(4)
    beliefs = [round(0.5 + 0.5 * rng.random(), 4) for _ in range(120)]
    labels = ["correct" if rng.random() < 0.7 else "incorrect" for _ in beliefs]
    record_free_text(queue, items, beliefs, labels=labels)
    belief_queue_policy_set(queue_id=queue.pk, random_share=0.4)
    for _ in range(80):  # 32 of them from the uniform share
        lease = belief_lease_next(queue_id=queue.pk, user=annotator)
        label = lease.label
        right = rng.random() < label.belief
        human = label.label if right else ("incorrect" if label.label == "correct" else "correct")
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=human)
    figures = belief_trust(queue=queue)
    [share] = figures["powered"]
    assert (share["task"], share["positive"], share["n"]) == ("free-text", "correct", 120)
    # Recomputed from the rows: the judge's predictions, the reviews, each label's inclusion probability.
    pi = design(queue=queue)
    stored = list(BeliefLabel.objects.filter(queue=queue).order_by("pk"))
    reviews = dict(BeliefReview.objects.filter(label__queue=queue).values_list("label_id", "human_label"))
    f = [b.belief if b.label == "correct" else 1 - b.belief for b in stored]
    y = [None if b.pk not in reviews else float(reviews[b.pk] == "correct") for b in stored]
    inclusion = [pi[b.pk][1] for b in stored]
    expected = ppi.powered_mean(f, y, inclusion)
    assert share["powered"]["value"] == pytest.approx(expected.value, abs=1e-12)
    assert (share["powered"]["low"], share["powered"]["high"]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    people = ppi.powered_mean(f, y, inclusion, lam=0.0)
    assert share["people"]["value"] == pytest.approx(people.value, abs=1e-12)
    assert share["judge"] == {"value": pytest.approx(labels.count("correct") / 120), "n": 120, "unscored": 0}
    assert share["powered"]["n_reviewed"] == 80 and share["powered"]["n_uniform"] >= 10
    # One queue's uniform share is drawn at random (each label's audit key), so its interval's width is a draw too:
    # that the judge makes the interval narrower on average is a property of many draws, measured in
    # tests/annotation/test_ppi.py (300 simulated queues). Here: a judge-powered estimate, inside its interval.
    assert expected.value is not None and expected.lam is not None and expected.lam > 0
    assert expected.low <= expected.value <= expected.high
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("annotation:belief_trust", args=[queue.name])).content.decode()
    section = page[page.index('id="powered"'):]
    value = float(re.search(r'id="powered-free-text-powered" data-value="([^"]+)"', section).group(1))
    assert value == pytest.approx(expected.value, abs=1e-12)
    assert f"{expected.low:.3f}, {expected.high:.3f}" in section
    assert "n = 120; 80 reviewed" in section
    assert re.search(r'id="powered-free-text-judge" data-value="[^"]+">0\.\d{3} <span class="muted">n = 120', section)
    api = client.get(f"/api/annotation/belief/queues/{queue.name}/trust/")
    assert api.status_code == 200, api.content
    assert api.json()["powered"][0]["powered"]["value"] == pytest.approx(expected.value)


def test_labels_tied_by_u_before_tie_keys_are_refused_not_weighted_when_the_random_draws_cannot_reach_them(annotator):
    """Labels recorded before tie keys (tie_key empty) with one belief: the order stream takes them by u, so after
    its last hand-out the ones it left have u above its frontier, beyond the random draws so far: no chance of
    review yet (pi 0), and the weighted estimate is refused saying why, not weighted at u*. New labels (a tie key
    each) in the same round are weighted at u*."""
    from annotation.models import ItemStatus

    for legacy in (True, False):
        queue = belief_queue_for(name=f"ties-{int(legacy)}", order="triage", blind=False)
        belief_queue_policy_set(queue_id=queue.pk, random_share=0.2)
        record_free_text(queue, make_items(40, status=ItemStatus.PUBLISHED, source=f"tie{legacy}"), [0.7] * 40)
        if legacy:
            BeliefLabel.objects.filter(queue=queue).update(tie_key=None)
        for _ in range(9):  # hand-outs 1-4 and 6-9 in triage order, 5 at random: the order stream's is the last
            lease = belief_lease_next(queue_id=queue.pk, user=annotator)
            belief_review_submit(lease_id=lease.pk, user=annotator, human_label="correct")
        sampling = design(queue=queue)
        labels = list(BeliefLabel.objects.filter(queue=queue))
        unreviewed = [sampling[label.pk][1] for label in labels if not label.first_stream]
        trust_figures = belief_trust(queue=queue)
        if legacy:
            frontier = max(label.audit_key for label in labels if label.first_stream == "order")
            assert all(label.audit_key > frontier for label in labels if not label.first_stream)
            assert set(unreviewed) == {0.0}
            assert "have not reached them yet" in trust_figures["weighted"]["missing"]
        else:
            assert set(unreviewed) == {trust_figures["u_star"]} and trust_figures["u_star"] > 0
            assert "have not reached them yet" not in trust_figures["weighted"]["missing"]
