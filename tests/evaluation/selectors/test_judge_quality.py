"""evaluation.selectors.judge_quality: the judge quality card's figures equal the queue's trust figures and scipy
on the stored labels and reviews; the card as CSV rows."""
import random

import pytest
from scipy.stats import spearmanr

from annotation.models import BeliefLabel, ItemStatus
from annotation.selectors.belief_trust import belief_trust
from annotation.services.belief import belief_labels_record, belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from evaluation.judge import quality
from evaluation.selectors.judge_quality import CSV_COLUMNS, card_rows, judge_quality_card
from evaluation.services.judge import judge_config_builtin
from tests.annotation.belief_support import free_text_row, screening_rows
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db


def reviewed_config(annotator, *, labels: int = 120, reviews: int = 80, seed: int = 4):
    """The built-in judge's queue with free-text labels whose answers have many lengths (longer answers believed
    more correct), 40% of hand-outs drawn at random, `reviews` of them reviewed by a person who agrees with the
    judge as often as its belief says."""
    rng = random.Random(seed)
    items = make_items(5, status=ItemStatus.PUBLISHED)
    config = judge_config_builtin()
    rows = []
    for i in range(labels):
        length = rng.randint(3, 300)
        belief = round(min(1.0, 0.5 + length / 700 + 0.2 * rng.random()), 4)
        row = free_text_row(items[i % 5], i, belief=belief, label="correct" if rng.random() < 0.7 else "incorrect")
        row["payload"] = {"answer": "x" * length}
        rows.append(row)
    belief_labels_record(queue=config.queue, rows=rows)
    belief_queue_policy_set(queue_id=config.queue_id, random_share=0.4)
    for _ in range(reviews):
        lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
        label = lease.label
        human = label.label if rng.random() < label.belief else (
            "incorrect" if label.label == "correct" else "correct")
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=human)
    return config


def test_the_card_is_the_queues_trust_figures_spread_and_scipys_length_correlation(annotator):
    config = reviewed_config(annotator)
    card = judge_quality_card(config=config)
    trust = belief_trust(queue=config.queue)
    for kind in ("weighted", "uniform"):
        assert card["agreement"][kind]["accuracy"] == trust[kind]["accuracy"]
        assert card["agreement"][kind]["kappa"] == trust[kind]["kappa"]
        assert card["calibration"][kind]["ece"] == trust[kind]["ece"]
    weighted = card["agreement"]["weighted"]["accuracy"]
    assert weighted["value"] is not None and weighted["low"] < weighted["value"] < weighted["high"]
    assert card["calibration"]["weighted"]["ece"]["value"] is not None
    assert (card["n_labels"], card["n_scored"], card["n_reviews"]) == (120, 120, 80)

    stored = list(BeliefLabel.objects.filter(queue=config.queue).order_by("pk"))
    beliefs = [label.belief for label in stored]
    assert card["spread"]["all"]["n"] == 120
    assert card["spread"]["all"]["mean"] == pytest.approx(sum(beliefs) / 120)
    assert card["spread"]["all"]["extreme"] == sum(b >= 0.99 or b <= 0.01 for b in beliefs)

    # The length bias: P(correct) against the answer's length, as scipy computes it on the same labels.
    lengths = [len(label.payload["answer"]) for label in stored]
    shares = [label.belief if label.label == "correct" else 1 - label.belief for label in stored]
    expected = spearmanr(lengths, shares)
    rho = card["length"]["spearman"]
    assert rho["rho"] == pytest.approx(float(expected.statistic), abs=1e-12) and rho["n"] == 120
    assert rho["p_value"] == pytest.approx(float(expected.pvalue), rel=1e-9)
    assert rho["low"] < rho["rho"] < rho["high"]
    # Agreement by length over the reviewed labels, weighted: the bins cover every reviewed label once.
    bins = card["length"]["bins"]
    assert sum(b["accuracy"]["n"] for b in bins) == card["length"]["n_reviewed"] == 80
    assert [b["from"] for b in bins] == sorted(b["from"] for b in bins)
    # No probe yet: the position figures say why they are empty.
    assert [p["kind"] for p in card["position"]] == ["reversed", "rotated"]
    assert all(p["n"] == 0 and p["rate"] is None and p["reason"] for p in card["position"])


def test_card_rows_carry_every_section_with_its_n(annotator):
    card = judge_quality_card(config=reviewed_config(annotator, labels=40, reviews=20))
    rows = card_rows(card)
    assert all(set(row) == set(CSV_COLUMNS) for row in rows)
    assert {row["section"] for row in rows} == {"agreement", "calibration", "spread", "position", "length"}
    [weighted] = [r for r in rows if (r["section"], r["figure"], r["estimate"], r["aspect"])
                  == ("agreement", "accuracy", "weighted", "")]
    assert weighted["value"] == card["agreement"]["weighted"]["accuracy"]["value"]
    assert weighted["n"] == card["agreement"]["weighted"]["accuracy"]["n"]
    [rho] = [r for r in rows if r["figure"] == "spearman_rho"]
    assert rho["value"] == card["length"]["spearman"]["rho"] and rho["n"] == 40
    assert [r["value"] for r in rows if r["figure"] == "mean_belief"] == [card["spread"]["all"]["mean"]]


def test_a_screening_queue_has_no_length_figure_and_spreads_per_question():
    items = make_items(3, status=ItemStatus.PUBLISHED)
    config = judge_config_builtin()
    rows = [row for item in items for row in screening_rows(item, {"1.1": ("no", 0.9), "keep": ("keep", 0.7)})]
    belief_labels_record(queue=config.queue, rows=rows)
    card = judge_quality_card(config=config)
    assert card["length"] is None
    assert [(s["aspect"], s["n"]) for s in card["spread"]["by_aspect"]] == [("1.1", 3), ("keep", 3)]
    assert card["spread"]["all"]["n"] == 6
    assert quality.EXTREME == 0.01


def test_without_a_uniform_sample_the_length_bins_are_refused_with_the_queues_reason(annotator):
    config = reviewed_config(annotator, labels=60, reviews=0)
    belief_queue_policy_set(queue_id=config.queue_id, random_share=0.0)  # triage only: nothing drawn at random
    for _ in range(30):
        lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=lease.label.label)
    card = judge_quality_card(config=config)
    reason = card["agreement"]["weighted"]["reason"]
    assert reason and card["agreement"]["weighted"]["accuracy"]["value"] is None
    bins = card["length"]["bins"]
    assert bins and all(b["accuracy"]["value"] is None and b["accuracy"]["reason"] == reason for b in bins)
    # The rank correlation needs no review: it is given.
    assert card["length"]["spearman"]["rho"] is not None and card["length"]["spearman"]["n"] == 60
