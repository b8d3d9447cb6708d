"""The page of a label under review, as an annotator reads and answers it: the target named by its item and
question, the judge's payload in words, one action (a click or a key) per label that opens the next, no answer
preferred; the queue list explains k and counts only the reviews of the queue; blind review is the default."""
import pytest
from django.urls import reverse

from annotation.models import BeliefQueue, BeliefReview
from annotation.services.belief import belief_labels_record, belief_queue_for
from annotation.services.verification import verification_submit
from tests.support.page_text import visible_text

from .support import free_text_row, record_free_text, screening_rows

pytestmark = pytest.mark.django_db


def _next(client, queue) -> str:
    response = client.post(reverse("annotation:belief_next", args=[queue.name]))
    assert response.status_code == 302
    return response["Location"]


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
