"""Home routing, item browser and the role checks on every foundation page."""
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Item
from tests.support.items import import_text

pytestmark = pytest.mark.django_db


def _items(n: int = 3):
    lines = []
    for i in range(n):
        lines.append(json.dumps({
            "id": i + 1,
            "context": f"Story {i}. The gardener left muddy boots by the door. The window was open from inside.",
            "question": "Based on the boots, who was outside?" if i % 2 else "How did the thief enter?",
            "options": ["The gardener", "The cook", "The maid", "Nobody"], "answer": i % 4,
            "clue_graph": {"evidence": "The gardener left muddy boots by the door -> he had been outside\nwindow was open from inside -> someone opened it",
                           "multi_hop_reasoning": "After correlating the clues we get:\nhe had been outside + someone opened it -> The gardener."},
        }))
    import_text("\n".join(lines) + "\n", file_name="t.jsonl", source="t", split="dev")


def test_anonymous_is_sent_to_login(client):
    for url in ["/", reverse("annotation:item_list"), reverse("annotation:item_import")]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_user_without_role_is_refused(client, plain_user):
    client.force_login(plain_user)
    assert "no role yet" in client.get("/").content.decode()
    _items(1)
    item = Item.objects.get()
    for url in [reverse("annotation:item_list"), reverse("annotation:item_detail", args=[item.pk]),
                reverse("annotation:item_import"), "/api/schema/"]:
        assert client.get(url).status_code == 403, url


def test_annotator_sees_items_but_not_researcher_pages(annotator_client):
    _items()
    home = annotator_client.get("/").content.decode()
    assert reverse("annotation:item_list") in home
    assert reverse("annotation:item_import") not in home
    assert annotator_client.get(reverse("annotation:item_import")).status_code == 403
    assert annotator_client.get("/admin/").status_code == 302  # not staff: admin login


def test_researcher_home_links_to_every_area(researcher_client):
    home = researcher_client.get("/").content.decode()
    assert reverse("annotation:item_list") in home
    assert reverse("annotation:item_import") in home
    assert reverse("admin:index") in home


def test_item_browser_filters_and_search(annotator_client):
    _items(4)
    url = reverse("annotation:item_list")
    page = annotator_client.get(url).content.decode()
    assert "4 items" in page
    assert "2 items" in annotator_client.get(url, {"question_type": "how"}).content.decode()
    assert "0 items" in annotator_client.get(url, {"split": "nope"}).content.decode()
    searched = annotator_client.get(url, {"q": "boots"}).content.decode()
    assert "4 items" in searched
    partial = annotator_client.get(url, {"question_type": "who"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and 'id="results"' in partial and "2 items" in partial


def test_item_browser_query_count_does_not_grow_with_items(annotator_client):
    _items(3)
    url = reverse("annotation:item_list")
    annotator_client.get(url)
    with CaptureQueriesContext(connection) as small:
        annotator_client.get(url)
    _items(40)
    with CaptureQueriesContext(connection) as large:
        annotator_client.get(url)
    assert len(large) == len(small) <= 10


def test_item_page_highlights_anchored_clues(annotator_client):
    _items(1)
    item = Item.objects.get()
    page = annotator_client.get(reverse("annotation:item_detail", args=[item.pk])).content.decode()
    assert '<mark class="clue" title="clue 1">The gardener left muddy boots by the door</mark>' in page
    assert "he had been outside" in page and "The gardener." in page


def test_import_page_uploads_and_reports_errors(researcher_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    url = reverse("annotation:item_import")
    bad = SimpleUploadedFile("bad.jsonl", b'{"id": 1}\n')
    page = researcher_client.post(url, {"file": bad, "source": "up", "split": "dev"}).content.decode()
    assert "bad.jsonl:1" in page and "nothing was imported" in page
    good = SimpleUploadedFile("good.jsonl", json.dumps({
        "id": 5, "context": "A quiet night.", "question": "Who?", "options": ["A", "B"], "answer": 1,
        "clue_graph": {"evidence": "", "multi_hop_reasoning": ""}}).encode() + b"\n")
    response = researcher_client.post(url, {"file": good, "source": "up", "split": "dev"}, follow=True)
    assert "created 1" in response.content.decode()
    assert Item.objects.filter(source="up").count() == 1


def test_api_schema_for_researchers(researcher_client):
    response = researcher_client.get("/api/schema/")
    assert response.status_code == 200 and b"openapi" in response.content


def test_healthz(client):
    assert client.get("/healthz").json() == {"ok": True}


def test_admin_is_for_researchers_only(client, django_user_model, researcher, annotator):
    research_only = django_user_model.objects.create_user("res2", password="x")  # not staff, not superuser
    from django.contrib.auth.models import Group

    research_only.groups.add(Group.objects.get(name="researchers"))
    client.force_login(research_only)
    page = client.get("/admin/")
    assert page.status_code == 200 and b"Items" in page.content
    assert client.get("/admin/annotation/item/").status_code == 200
    staff_annotator = annotator
    staff_annotator.is_staff = True
    staff_annotator.save()
    client.force_login(staff_annotator)
    assert client.get("/admin/").status_code == 302  # staff without the researcher role is refused
