"""Judge-powered estimates on the trust page and in its API (issue 21, point 1): beside the judge alone and people
alone, each with its n, equal to annotation.ppi recomputed from the stored labels, reviews and hand-outs."""
import random
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation import ppi
from annotation.models import BeliefLabel, BeliefReview
from annotation.selectors.belief_trust import belief_trust, design
from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit

from .support import record_free_text

pytestmark = pytest.mark.django_db


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
    assert expected.value is not None and people.high - people.low > expected.high - expected.low
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
