"""The work queue (annotation.views.queue): next item leads to the stage screen, query counts, auto-advance goes back
only to a page of this site."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.encoding import iri_to_uri
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import AnnotatorLease, Item, ItemStatus, Stage
from annotation.views.common import AUTO_ADVANCE_KEY
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


# ---- auto-advance goes back only to a page of this site


#: `back` values no page sends ("abc", "0", several of them, a view's name, another site): the queue.
NOT_A_PAGE = (["abc"], ["0"], ["1.5"], ["-1"], ["annotation:queue"], ["admin:index"], [""], ["abc", "0"],
              ["/annotation/items/", "x"], ["https://evil.example/"], ["//evil.example/"], ["/\\evil.example/"],
              ["/\t/evil.example/"], ["javascript:alert(1)"], ["http://testserver/annotation/items/"],
              [" /annotation/items/"])
#: A path of this site: gone back to as it is.
PAGES = ("/annotation/items/7/verify/", "/annotation/items/?split=test&page=2", "/")


def test_auto_advance_goes_back_to_the_page_it_was_on_and_anywhere_else_to_the_queue(annotator_client):
    """Never a 500 (a bare word was taken as the name of a view to look up), never another site; the setting itself
    is taken in every case."""
    url, queue = reverse("annotation:auto_advance"), reverse("annotation:queue")
    cases = [(back, queue) for back in NOT_A_PAGE] + [(["abc", page], page) for page in PAGES]
    wrong = []
    for back, expected in cases:
        try:
            response = annotator_client.post(url, {"on": "0", "back": back})
        except Exception as error:  # noqa: BLE001 - what a 500 would have been
            wrong.append(f"{back}: {type(error).__name__}")
            continue
        if (response.status_code, response.get("Location")) != (302, expected):
            wrong.append(f"{back}: {response.status_code} to {response.get('Location')}")
        elif annotator_client.session[AUTO_ADVANCE_KEY] is not False:
            wrong.append(f"{back}: the setting was not taken")
    assert not wrong, "\n".join(wrong)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(back=st.lists(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30)
                     | st.from_regex(r"\A/[a-z0-9/?=&.:\\\t -]{0,20}\Z"), max_size=3))
def test_auto_advance_answers_every_back_value_with_a_redirect_to_a_path_of_this_site(annotator_client, back):
    response = annotator_client.post(reverse("annotation:auto_advance"), {"on": "0", "back": back})
    assert response.status_code == 302
    location = response["Location"]
    # As a browser reads it: tabs and line breaks dropped, a backslash as a slash.
    read = re.sub(r"[\t\r\n]", "", location).replace("\\", "/")
    parts = urlsplit(read)
    assert read.startswith("/") and not read.startswith("//") and not parts.scheme and not parts.netloc, location
    assert location in (reverse("annotation:queue"), iri_to_uri(back[-1] if back else ""))
