"""A screening queue's trust figures (issue 21): its labels answer six questions (Table 7's five criteria and the
keep decision), so kappa is given per criterion, each with its n and its interval inside [-1, 1], and no pooled
kappa: pooling six 2-label questions into one table measures that people pick from the same two labels as the
judge, not that they agree with it."""
import random
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.screening import SCREENING_CRITERIA
from annotation.selectors.belief_trust import belief_trust
from annotation.services.belief import belief_labels_record, belief_queue_for
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from tests.annotation.workflow_support import make_items

from .support import screening_rows

pytestmark = pytest.mark.django_db

ASPECTS = [*SCREENING_CRITERIA, "keep"]


def test_reviewers_answering_at_random_get_no_pooled_kappa_and_about_zero_per_criterion(annotator, researcher):
    rng = random.Random(5)
    queue = belief_queue_for(name="screen-trust", order="audit")
    items = make_items(20, source="s")
    for item in items:
        verdicts = {a: (rng.choice(["keep", "delete"] if a == "keep" else ["yes", "no"]), round(rng.random(), 3))
                    for a in ASPECTS}
        belief_labels_record(queue=queue, rows=screening_rows(item, verdicts))
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
            assert kappa["n"] == 20 and -1 <= kappa["low"] <= kappa["value"] <= kappa["high"] <= 1, (aspect, kappa)
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
        assert re.search(rf'id="kappa-{re.escape(aspect)}-uniform" data-value="[^"]+">{value["value"]:.3f} '
                         rf'<span class="muted">\[{value["low"]:.3f}, {value["high"]:.3f}\]</span> '
                         r'<span class="muted">n = 20</span>', section), aspect
