"""The work queue (annotation.views.queue): next item leads to the stage screen, query counts."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import AnnotatorLease, Item, ItemStatus, Stage
from tests.support.page_text import visible_text

from ..workflow_support import client_for, make_items, set_k

pytestmark = pytest.mark.django_db


def test_queue_next_item_leads_to_the_stage_screen_and_page_renders(annotator_client):
    set_k(Stage.VERIFICATION, 1)
    item, _ = make_items(2)
    response = annotator_client.post(reverse("annotation:next_item", args=["verification"]))
    assert response.status_code == 302 and response["Location"] == reverse("annotation:verify", args=[item.pk])
    page = annotator_client.get(response["Location"]).content.decode()
    for key in ('data-key="k"', 'data-key="d"', 'data-key="n"', 'data-key="1"', 'data-key="5"'):
        assert key in page
    assert "1.4 The answer is not correct" in page and "1.5 Discrimination or bias" in page


def test_queue_page_query_count_does_not_grow(annotator_client, annotator):
    set_k(Stage.VERIFICATION, 1)
    make_items(3)
    url = reverse("annotation:queue")
    annotator_client.post(reverse("annotation:next_item", args=["verification"]))
    annotator_client.get(url)
    with CaptureQueriesContext(connection) as small:
        assert annotator_client.get(url).status_code == 200
    make_items(30, start=100)
    for stage in (Stage.REWRITE, Stage.CLUE_GRAPH):
        AnnotatorLease.objects.create(item=Item.objects.filter(status="verification").last(), stage=stage,
                                  annotator=annotator, leased_at="2030-01-01T00:00Z", expires_at="2030-01-01T01:00Z")
    with CaptureQueriesContext(connection) as large:
        annotator_client.get(url)
    assert len(large) == len(small) <= 12, [q["sql"] for q in large.captured_queries]
    # The next-item hand-out itself is a fixed number of queries too.
    with CaptureQueriesContext(connection) as hand_out:
        annotator_client.post(reverse("annotation:next_item", args=["verification"]))
    assert len(hand_out) <= 16


def test_an_empty_queue_says_why_and_who_fills_it(annotator, researcher):
    for_annotator = visible_text(client_for(annotator).get(reverse("annotation:queue")))
    assert "Nothing to work on yet" in for_annotator
    assert "when a researcher queues imported items for verification on the Curation progress page" in for_annotator
    assert "No items have been imported yet." in for_annotator
    assert "Ask a researcher to queue items" in for_annotator
    assert "0 item(s)" not in for_annotator and "No items in this stage." in for_annotator
    assert "Items arrive here once they finish “Question verification”." in for_annotator  # the rewrite stage
    make_items(3, status=ItemStatus.IMPORTED)
    page = client_for(researcher).get(reverse("annotation:queue"))
    for_researcher = visible_text(page)
    assert "3 imported items are waiting to be queued." in for_researcher
    assert "Queue items on Curation progress" in for_researcher
    assert f'href="{reverse("annotation:progress")}"' in page.content.decode()


def test_a_stage_with_items_counts_them_and_the_empty_notice_is_gone(annotator_client):
    make_items(2)
    text = visible_text(annotator_client.get(reverse("annotation:queue")))
    assert "Nothing to work on yet" not in text
    assert "2 items in this stage · you completed 0" in text


def test_the_queue_says_in_words_what_k_is(annotator_client):
    set_k(Stage.VERIFICATION, 2)
    text = visible_text(annotator_client.get(reverse("annotation:queue")).content.decode())
    assert ("k = 2: 2 different annotators complete this stage for each item, each on their own; the item moves on "
            "when all 2 have. When their decisions differ, a third person settles it in Adjudication.") in text
    assert "k = 1: one annotator completes this stage for each item, then the item moves on." in text
