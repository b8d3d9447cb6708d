"""The judge in the workflow screens: screening suggestions in verification (accepted, changed, or
absent: where each decision came from) and the clue-graph draft (accept, edit, discard)."""
import pytest
from django.urls import reverse

from annotation.models import BeliefLabel, BeliefReview, Item, ItemStatus, VerificationDecision
from annotation.services.belief import belief_labels_record, belief_queue_for
from annotation.services.verification import verification_submit
from tests.annotation.workflow_support import make_items

from .support import screening_rows

pytestmark = pytest.mark.django_db

DELETE_FOR_MATH = {"keep": ("delete", 0.83), "1.1": ("no", 0.9), "1.2": ("yes", 0.77), "1.3": ("no", 0.6),
                   "1.4": ("no", 0.95), "1.5": ("no", 0.99)}


@pytest.fixture
def screening_queue(db):
    return belief_queue_for(name="screen", blind=False)  # suggestions are shown only outside blind review


@pytest.fixture
def to_verify(db):
    return make_items(3, status=ItemStatus.VERIFICATION, source="v")


def test_verification_screen_shows_the_suggestion_with_its_belief(annotator_client, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    page = annotator_client.get(reverse("annotation:verify", args=[item.pk])).content.decode()
    assert 'id="judge-decision">delete<' in page and 'id="judge-decision-belief">0.83<' in page
    assert 'id="judge-heavy_math"' in page and "0.77" in page
    assert 'id="accept-suggestion"' in page
    other = annotator_client.get(reverse("annotation:verify", args=[to_verify[1].pk])).content.decode()
    assert 'id="judge-suggestion"' not in other


def test_accepting_the_suggestion_records_judge_accepted(annotator_client, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    response = annotator_client.post(reverse("annotation:verify", args=[item.pk]),
                                     {"decision": "delete", "criteria": ["heavy_math"], "item_version": item.version})
    assert response.status_code == 302
    decision = VerificationDecision.objects.get(item=item)
    assert decision.source == "judge-accepted"
    reviews = BeliefReview.objects.filter(label__item=item)
    assert reviews.count() == 6 and all(r.agrees for r in reviews) and {r.via for r in reviews} == {"verification"}
    keep = BeliefLabel.objects.get(item=item, aspect="keep")
    assert (keep.final_label, keep.final_source) == ("delete", "judge-accepted")
    page = annotator_client.get(reverse("annotation:verify", args=[item.pk])).content.decode()
    assert 'id="decision-source"' in page and "Judge accepted" in page


def test_changing_the_suggestion_records_judge_overridden(annotator, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    decision = verification_submit(item_id=item.pk, user=annotator, decision="delete", criteria=["bias"],
                                   item_version=item.version)
    assert decision.source == "judge-overridden"
    labels = {label.aspect: label for label in BeliefLabel.objects.filter(item=item)}
    assert labels["keep"].final_source == "judge-accepted"  # delete, as the judge said
    assert (labels["1.2"].final_label, labels["1.2"].final_source) == ("no", "judge-overridden")
    assert (labels["1.5"].final_label, labels["1.5"].final_source) == ("yes", "judge-overridden")


def test_without_a_suggestion_the_decision_is_human_only(annotator, to_verify):
    item = to_verify[1]
    decision = verification_submit(item_id=item.pk, user=annotator, decision="keep", criteria=[],
                                   item_version=item.version)
    assert decision.source == "human-only"


def _draft_label(queue, item):
    belief_labels_record(queue=queue, rows=[{
        "item_id": item.pk, "item_version": item.version, "task": "clue-graph", "target": f"item:{item.pk}",
        "aspect": "graph", "label": "draft", "choices": ["draft", "edited", "discarded"],
        "payload": {"evidence": "muddy boots by the desk -> someone came from the garden",
                    "multi_hop_reasoning": "someone came from the garden -> The gardener"},
        "belief": 0.7, "belief_source": "verbal", "status": "scored", "producer": "judge-run:3"}])
    return BeliefLabel.objects.get(item=item, task="clue-graph")


@pytest.mark.parametrize("action, outcome, changed", [("accept", "draft", True), ("edit", "edited", True),
                                                      ("discard", "discarded", False)])
def test_clue_graph_draft_accept_edit_discard(annotator_client, annotator, action, outcome, changed):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, source="g")
    label = _draft_label(belief_queue_for(name="drafts", blind=False), item)
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
