"""The belief-review API: queues, labels and reviews (researchers), next label and review (annotators),
trust figures; blind queues hide the judge's verdict; refusals map to their status."""
import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import BeliefReview
from annotation.services.belief import belief_queue_policy_set
from tests.annotation.belief_support import record_free_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(queue, items):
    record_free_text(queue, items, [0.3, 0.6, 0.9], labels=["correct", "incorrect", "correct"])
    return queue


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def _next(client, queue):
    return client.post(reverse("annotation_api:belief_next", args=[queue.name]))


def _submit(client, lease_id, label, **extra):
    return client.post(reverse("annotation_api:belief_review_submit", args=[lease_id]),
                       {"human_label": label, **extra}, content_type="application/json")


def test_next_and_review_then_the_reviews_and_labels_lists(labelled, annotator, researcher):
    ann = _client(annotator)
    handed = _next(ann, labelled).json()
    assert handed["label"]["label"] == "correct" and handed["label"]["belief"] == 0.3
    assert handed["label"]["choices"] == ["correct", "incorrect"] and handed["stream"] == "order"
    assert _next(ann, labelled).json()["lease"] == handed["lease"]  # the same lease while it is live
    answer = _submit(ann, handed["lease"], "incorrect", comment="the answer names the butler")
    assert answer.status_code == 201
    assert answer.json()["agrees"] is False and answer.json()["judge_label"] == "correct"
    assert _submit(ann, handed["lease"], "correct").status_code == 409
    res = _client(researcher)
    reviews = res.get(reverse("annotation_api:belief_reviews"), {"queue": labelled.name}).json()
    assert reviews["count"] == 1 and reviews["results"][0]["comment"] == "the answer names the butler"
    labels = res.get(reverse("annotation_api:belief_labels"), {"queue": labelled.name, "task": "free-text"}).json()
    assert labels["count"] == 3
    first = next(x for x in labels["results"] if x["target"] == "result:0")
    assert (first["final"], first["provenance"]) == ("incorrect", "judge-overridden")
    only = res.get(reverse("annotation_api:belief_labels"), {"target": ["result:1", "result:2"]}).json()
    assert sorted(x["target"] for x in only["results"]) == ["result:1", "result:2"]
    trust = res.get(reverse("annotation_api:belief_trust", args=[labelled.name])).json()
    assert trust["n_reviews"] == 1 and trust["uniform"]["n"] == 0 and trust["weighted"]["n"] == 1
    assert trust["counts"] == {"reviews": 1, "agree": 0, "labels": 1, "uniform_reviews": 0, "uniform_agree": 0,
                               "uniform_labels": 0}
    # One review is no estimate: no 0.000 standing for "not enough data", but None and the reason.
    assert trust["weighted"]["accuracy"]["value"] is None and trust["weighted"]["accuracy"]["reason"]
    assert not trust["weighted"]["defined"] and trust["weighted"]["missing"]


def test_blind_queue_hides_the_verdict_until_the_review(labelled, annotator):
    belief_queue_policy_set(queue_id=labelled.pk, blind=True)
    ann = _client(annotator)
    handed = _next(ann, labelled).json()
    assert handed["blind"] is True
    assert {k: handed["label"][k] for k in ("label", "belief", "belief_source", "rationale")} == dict.fromkeys(
        ("label", "belief", "belief_source", "rationale"))
    answer = _submit(ann, handed["lease"], "correct").json()
    assert answer["blind"] is True and answer["judge_label"] == "correct" and answer["belief"] == 0.3


def test_refusals(labelled, annotator, annotator2):
    ann, other = _client(annotator), _client(annotator2)
    lease = _next(ann, labelled).json()["lease"]
    assert _submit(other, lease, "correct").status_code == 403
    bad = _submit(ann, lease, "maybe")
    assert bad.status_code == 400 and bad.json()["field"] == "human_label"
    assert _submit(ann, 10 ** 9, "correct").status_code == 404
    assert _next(ann, type(labelled)(name="nope")).status_code == 404
    assert not BeliefReview.objects.exists()


def test_roles(labelled, annotator, plain_user):
    ann = _client(annotator)
    assert ann.get(reverse("annotation_api:belief_queues")).status_code == 200
    for name in ("belief_labels", "belief_reviews"):
        assert ann.get(reverse(f"annotation_api:{name}")).status_code == 403
    assert ann.get(reverse("annotation_api:belief_trust", args=[labelled.name])).status_code == 403
    nobody = _client(plain_user)
    assert _next(nobody, labelled).status_code == 403
    assert Client().post(reverse("annotation_api:belief_next", args=[labelled.name])).status_code in (401, 403)


def test_an_empty_queue_answers_204(queue, annotator):
    assert _next(_client(annotator), queue).status_code == 204
