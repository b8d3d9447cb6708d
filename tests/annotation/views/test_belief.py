"""The belief-review pages (annotation.views.belief): the queue list (it explains k and counts only the reviews of
the queue); a label under review, plain and htmx, blind or not (new queues are blind, and blind pages offer no
accept button), named by its item and question with the judge's payload in words, one action (a click or a key)
per label that opens the next; roles; the trust page with its policy form and export, its figures after a review
round of 100 labels equal to the same figures computed here from the stored rows (scikit-learn / numpy); the
clue-graph draft (accept, edit, discard); the navigation links."""
import json
import random
import re

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from scipy.stats import norm
from sklearn.metrics import cohen_kappa_score

from annotation.models import BeliefLabel, BeliefLease, BeliefQueue, BeliefReview, Item, ItemStatus
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from annotation.services.verification import verification_submit
from annotation.trust import MIN_LABELS
from tests.annotation.belief_support import free_text_row, graph_draft, record_free_text, screening_rows
from tests.annotation.workflow_support import make_items
from tests.support.page_text import visible_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(queue, items):
    record_free_text(queue, items, [0.3, 0.6, 0.9], labels=["correct", "incorrect", "correct"])
    return queue


def _next(client, queue):
    response = client.post(reverse("annotation:belief_next", args=[queue.name]))
    assert response.status_code == 302
    return response["Location"]


def test_annotator_reviews_a_label_and_sees_the_judge(annotator_client, labelled):
    page = annotator_client.get(reverse("annotation:belief_queues"))
    assert page.status_code == 200 and b"judge-a" in page.content
    url = _next(annotator_client, labelled)
    page = annotator_client.get(url).content.decode()
    assert 'id="judge-label-value">correct<' in page and 'id="judge-belief">0.30<' in page
    assert "free answer 0" in page and "because 0" in page
    response = annotator_client.post(url, {"human_label": "correct"})
    assert response.status_code == 302
    page = annotator_client.get(url).content.decode()
    assert 'id="verdict-agreed"' in page and 'id="review-form"' not in page
    review = BeliefReview.objects.get()
    assert (review.human_label, review.agrees, review.blind, review.via) == ("correct", True, False, "queue")


def test_blind_review_hides_the_judge_until_the_answer_and_htmx_gets_the_partial(annotator_client, labelled):
    belief_queue_policy_set(queue_id=labelled.pk, blind=True)
    url = _next(annotator_client, labelled)
    page = annotator_client.get(url).content.decode()
    assert 'id="blind-note"' in page
    assert 'id="judge-label"' not in page and "because 0" not in page and "0.30" not in page
    response = annotator_client.post(url, {"human_label": "incorrect"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<div id="answer">') and "<html" not in fragment
    assert 'id="verdict-overridden"' in fragment and "0.30" in fragment
    review = BeliefReview.objects.get()
    assert review.blind is True and review.agrees is False
    label = review.label
    label.refresh_from_db()
    assert (label.final_label, label.final_source) == ("incorrect", "judge-overridden")


def test_a_choice_outside_the_labels_choices_is_refused(annotator_client, labelled):
    url = _next(annotator_client, labelled)
    response = annotator_client.post(url, {"human_label": "maybe"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and b"form-errors" in response.content
    assert not BeliefReview.objects.exists()


def test_someone_elses_lease_is_refused(annotator_client, labelled, annotator2, client):
    url = _next(annotator_client, labelled)
    client.force_login(annotator2)
    assert client.get(url).status_code == 403
    assert client.post(url, {"human_label": "correct"}).status_code == 403
    assert not BeliefReview.objects.exists()


def test_skip_gives_the_label_back_and_hands_out_the_next(annotator_client, labelled):
    url = _next(annotator_client, labelled)
    lease = BeliefLease.objects.get()
    response = annotator_client.post(reverse("annotation:belief_release", args=[lease.pk]), {"next": "1"})
    assert response.status_code == 302 and response["Location"] != url
    lease.refresh_from_db()
    assert lease.status == "released"


def test_trust_page_is_for_researchers(annotator_client, labelled):
    assert annotator_client.get(reverse("annotation:belief_trust", args=[labelled.name])).status_code == 403
    assert annotator_client.get(reverse("annotation:belief_trust_export", args=[labelled.name, "csv"])).status_code == 403
    assert annotator_client.post(reverse("annotation:belief_trust", args=[labelled.name]),
                                 {"order": "audit"}).status_code == 403
    assert annotator_client.get(reverse("annotation:belief_trust_index")).status_code == 403


def test_researcher_sets_the_policy_on_the_trust_page(researcher_client, labelled):
    url = reverse("annotation:belief_trust", args=[labelled.name])
    page = researcher_client.get(url)
    assert page.status_code == 200 and b"<svg" in page.content and b"policy-form" in page.content
    response = researcher_client.post(url, {"order": "audit", "random_share": "0.3", "reviewers_per_label": "2",
                                            "blind": "on", "accept_threshold": "0.85", "lease_minutes": "15"})
    assert response.status_code == 302
    queue = BeliefQueue.objects.get(pk=labelled.pk)
    assert (queue.order, queue.random_share, queue.reviewers_per_label, queue.blind, queue.accept_threshold,
            queue.lease_minutes) == ("audit", 0.3, 2, True, 0.85, 15)
    bad = researcher_client.post(url, {"order": "audit", "random_share": "3", "reviewers_per_label": "0",
                                       "lease_minutes": "15"})
    assert bad.status_code == 400 and b"form-errors" in bad.content
    assert researcher_client.get(reverse("annotation:belief_trust_index"))["Location"] == url


def test_export_has_the_review_rows(researcher, annotator_client, labelled):
    for _ in range(2):
        annotator_client.post(_next(annotator_client, labelled), {"human_label": "correct"})
    researcher_client = Client()
    researcher_client.force_login(researcher)
    csv_text = researcher_client.get(reverse("annotation:belief_trust_export", args=[labelled.name, "csv"])).content
    lines = csv_text.decode().strip().splitlines()
    assert lines[0].startswith("review_id,label_id,target") and len(lines) == 3
    data = json.loads(researcher_client.get(reverse("annotation:belief_trust_export",
                                                    args=[labelled.name, "json"])).content)
    assert data["queue"]["name"] == "judge-a" and len(data["reviews"]) == 2
    assert data["figures"]["n_reviews"] == 2 and "kappa" in data["figures"]["uniform"]


def test_navigation_links(annotator_client, researcher):
    page = annotator_client.get(reverse("annotation:queue")).content.decode()
    assert "Review judge labels" in page and "Judge trust" not in page
    researcher_client = Client()
    researcher_client.force_login(researcher)
    page = researcher_client.get(reverse("annotation:queue")).content.decode()
    assert "Judge trust" in page


def _queries(client, url) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_hot_pages_make_a_constant_number_of_queries(annotator_client, labelled, items):
    from annotation.services.belief import belief_queue_for

    queues_url = reverse("annotation:belief_queues")
    lease_url = _next(annotator_client, labelled)
    few = (_queries(annotator_client, queues_url), _queries(annotator_client, lease_url))
    for n in range(3):
        record_free_text(belief_queue_for(name=f"more-{n}"), items, [0.5] * 20, start=100)
    record_free_text(labelled, items, [0.5] * 50, start=200)
    assert (_queries(annotator_client, queues_url), _queries(annotator_client, lease_url)) == few
    assert few[0] <= 8 and few[1] <= 9  # the lease page: + the record that its judge was shown (belief_sightings)


def test_the_target_is_named_by_its_item_and_question_and_the_payload_is_in_words(annotator_client, queue, items):
    rows = [free_text_row(items[0], 168, belief=0.4, payload={"answer": "the gardener did", "matched_option": 0,
                                                                "similarities": [0.81234, 0.1, 0.05, 0.0]}),
            free_text_row(items[1], 169, belief=0.3, payload={"answer": "no idea", "matched_option": None})]
    belief_labels_record(queue=queue, rows=rows)
    pages = {}
    for _ in rows:
        url = _next(annotator_client, queue)
        pages[url] = visible_text(annotator_client.get(url).content.decode())
        annotator_client.post(url, {"human_label": "correct"})
    texts = list(pages.values())
    for text in texts:
        assert "result:" not in text and "None" not in text and "matched_option" not in text
    first = next(t for t in texts if "the gardener did" in t)
    assert f"A model's free-text answer to {items[0]}: {items[0].question}" in first
    assert "Closest option 1. The gardener" in first
    assert "Similarity to each option 1: 0.81 · 2: 0.10 · 3: 0.05 · 4: 0.00" in first
    second = next(t for t in texts if "no idea" in t)
    assert "Closest option" not in second and items[1].question in second


def test_one_action_answers_the_label_and_opens_the_next_saying_what_was_answered(annotator_client, queue, items):
    record_free_text(queue, items, [0.3, 0.6], labels=["correct", "incorrect"])
    first = _next(annotator_client, queue)
    html = annotator_client.get(first).content.decode()
    # A key per answer, none of them (nor accepting the judge's label) the big green one.
    assert 'data-key="1"' in html and 'data-key="2"' in html and 'data-key="a"' in html and 'data-key="s"' in html
    assert 'class="keep"' not in html and 'name="next" value="1"' in html
    response = annotator_client.post(first, {"human_label": "incorrect", "next": "1"})
    assert response.status_code == 302 and response["Location"] != first
    second = response["Location"]
    assert BeliefReview.objects.get().human_label == "incorrect"
    page = visible_text(annotator_client.get(second).content.decode())
    assert f"{items[0]}: you said “incorrect”. The judge said “correct” with belief 0.30: you overrode it." in page
    # The last label: back to the queues, with the answer and the news that nothing is left.
    response = annotator_client.post(second, {"human_label": "incorrect", "next": "1"}, follow=True)
    text = visible_text(response.content.decode())
    assert "you agreed." in text and f"No judge labels left for you in {queue.name}." in text


def test_a_refused_answer_stays_on_the_label_and_says_why(annotator_client, queue, items):
    record_free_text(queue, items, [0.3, 0.6])
    url = _next(annotator_client, queue)
    response = annotator_client.post(url, {"human_label": "maybe", "next": "1"})
    assert response.status_code == 400 and b"form-errors" in response.content
    assert not BeliefReview.objects.exists()


def test_new_queues_are_blind_and_blind_pages_offer_no_accept_button(annotator_client, items):
    queue = belief_queue_for(name="fresh")
    assert queue.blind and BeliefQueue._meta.get_field("blind").default is True
    record_free_text(queue, items, [0.7])
    html = annotator_client.get(_next(annotator_client, queue)).content.decode()
    assert 'id="blind-note"' in html and 'id="accept-judge"' not in html and "0.70" not in html


def test_the_queue_list_explains_k_and_counts_only_the_reviews_of_the_queue(annotator, annotator_client, items):
    queue = belief_queue_for(name="screen", reviewers_per_label=2, blind=False)
    verdicts = {"keep": ("keep", 0.9), "1.1": ("no", 0.9)}
    belief_labels_record(queue=queue, rows=screening_rows(items[0], verdicts))
    items[0].status = "verification"
    items[0].save(update_fields=["status"])
    # A verification decision reviews the item's screening labels on the verification screen: no queue review.
    verification_submit(item_id=items[0].pk, user=annotator, decision="keep", criteria=[],
                        item_version=items[0].version)
    assert BeliefReview.objects.filter(via="verification").count() == 2
    text = visible_text(annotator_client.get(reverse("annotation:belief_queues")).content.decode())
    assert "k = 2: each label is reviewed by 2 different people, one after the other, before it has a final label." \
        in text
    assert "0 reviewed in this queue · you reviewed 0 here" in text
    assert "2 labels were decided on the verification or clue-graph screen: they are no reviews of this queue." in text


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
                     "tie": label.tie_key, "stream": label.first_stream})
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
    k_star = max((r["belief"], r["tie"]) for r in rows if r["stream"] == "order")  # ties by the tie key
    pi = [1.0 if (r["belief"], r["tie"]) <= k_star else u_star for r in rows]
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




@pytest.mark.parametrize("action, outcome, changed", [("accept", "draft", True), ("edit", "edited", True),
                                                      ("discard", "discarded", False)])
def test_clue_graph_draft_accept_edit_discard(annotator_client, annotator, action, outcome, changed):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, source="g")
    label = graph_draft(belief_queue_for(name="drafts", blind=False), item)
    page = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    assert 'id="judge-draft"' in page and "someone came from the garden" in page
    response = annotator_client.post(reverse("annotation:belief_draft", args=[label.pk]),
                                     {"action": action, "base_version": item.version})
    assert response.status_code == 302 and response["Location"] == reverse("annotation:clue_graph", args=[item.pk])
    after = Item.objects.get(pk=item.pk)
    assert (after.evidence == label.payload["evidence"]) is changed
    assert (after.version == item.version + 1) is changed
    review = BeliefReview.objects.get(label=label)
    assert (review.human_label, review.via, review.agrees) == (outcome, "clue-graph", action == "accept")
    label.refresh_from_db()
    assert label.final_source == ("judge-accepted" if action == "accept" else "judge-overridden")
    page = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    assert 'id="judge-draft"' not in page  # decided: not offered again to this annotator
