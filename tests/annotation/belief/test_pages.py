"""The review pages: queue list, a label under review (plain and htmx, blind or not), roles, the
trust page with its policy form and export, the navigation links."""
import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import BeliefLease, BeliefQueue, BeliefReview
from annotation.services.belief import belief_queue_policy_set

from .support import record_free_text

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
    assert few[0] <= 8 and few[1] <= 8
