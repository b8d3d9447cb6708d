"""The item browser's empty state (annotation.views.items): researchers are sent to the import page, annotators
are told who fills it; filters that match nothing say so."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.support.page_text import visible_text

from ..workflow_support import client_for, make_items, record

pytestmark = pytest.mark.django_db


def test_empty_item_browser_tells_annotators_who_imports_and_shows_researchers_the_import_page(
        annotator, researcher):
    page = client_for(annotator).get(reverse("annotation:item_list"))
    text = visible_text(page)
    assert "No items yet: a researcher imports them and queues them for verification" in text
    assert "import_items" not in text and reverse("annotation:item_import") not in page.content.decode()
    page = client_for(researcher).get(reverse("annotation:item_list"))
    assert "Import a DetectBench file" in visible_text(page)
    assert f'href="{reverse("annotation:item_import")}"' in page.content.decode()


def test_filters_that_match_nothing_say_so(annotator_client):
    make_items(1)
    text = visible_text(annotator_client.get(reverse("annotation:item_list"), {"q": "zeppelin"}))
    assert "No items match these filters." in text and "No items yet" not in text


def test_the_import_page_keeps_the_chosen_split_and_source_after_an_upload(researcher_client):
    upload = SimpleUploadedFile("dev.jsonl", (json.dumps(record(1)) + "\n").encode())
    url = reverse("annotation:item_import")
    done = researcher_client.post(url, {"file": upload, "source": "mine", "split": "dev"})
    assert done.status_code == 302
    html = researcher_client.get(done["Location"]).content.decode()
    assert 'name="split" value="dev"' in html and 'name="source" value="mine"' in html
    assert 'name="split" value="test"' not in html
