"""The item browser's empty state (annotation.views.items): researchers are sent to the import page, annotators
are told who fills it; filters that match nothing say so."""
from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Item
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
    assert '<option value="dev" selected>dev</option>' in html and 'name="source" value="mine"' in html
    assert 'value="test"' not in html


def _upload(name: str, *ids: int):
    return SimpleUploadedFile(name, "".join(json.dumps(record(i)) + "\n" for i in ids).encode())


def test_the_import_form_offers_the_existing_splits_or_a_new_one_typed_on_purpose(researcher_client):
    url = reverse("annotation:item_import")
    html = researcher_client.get(url).content.decode()
    # No items yet: the only choice is a new split, and its name must be typed (no "test" by default).
    assert re.findall(r'<option value="([^"]*)"', html[html.index('name="split"'):html.index("</select>")]) == [
        "new split"]
    refused = researcher_client.post(url, {"file": _upload("pilot.jsonl", 1), "source": "s", "split": "new split"})
    assert refused.status_code == 400 and "Type the name of the new split." in visible_text(refused.content.decode())
    done = researcher_client.post(url, {"file": _upload("pilot.jsonl", 1), "source": "s", "split": "new split",
                                        "new_split": "pilot"}, follow=True)
    assert "pilot.jsonl into split pilot: created 1" in visible_text(done.content.decode())
    assert Item.objects.get().split == "pilot"
    html = researcher_client.get(url).content.decode()
    options = re.findall(r'<option value="([^"]*)"', html[html.index('name="split"'):html.index("</select>")])
    assert options == ["", "pilot", "new split"]


def test_a_file_named_for_another_split_is_imported_only_once_confirmed(researcher_client):
    url = reverse("annotation:item_import")
    researcher_client.post(url, {"file": _upload("a.jsonl", 1), "source": "s", "split": "new split",
                                 "new_split": "test"})
    # A dry run of train.jsonl into test says so beside what it would do.
    dry = researcher_client.post(url, {"file": _upload("train.jsonl", 2, 3), "source": "s", "split": "test",
                                       "dry_run": "on"})
    text = visible_text(dry.content.decode())
    assert "train.jsonl names the split “train”, not “test”." in text and "would have created 2" in text
    # The import itself waits for a confirmation, and writes nothing until then.
    refused = researcher_client.post(url, {"file": _upload("train.jsonl", 2, 3), "source": "s", "split": "test"})
    text = visible_text(refused.content.decode())
    assert refused.status_code == 400 and 'id="split-warning"' in refused.content.decode()
    assert "Choose “train”, or tick “Import into test anyway” and choose the file again." in text
    assert Item.objects.count() == 1
    confirmed = researcher_client.post(url, {"file": _upload("train.jsonl", 2, 3), "source": "s", "split": "test",
                                             "split_confirmed": "1"})
    assert confirmed.status_code == 302 and Item.objects.filter(split="test").count() == 3
    # The file's own split, or a name that names none, needs nothing.
    ok = researcher_client.post(url, {"file": _upload("detectbench_test_v2.jsonl", 4), "source": "s", "split": "test"})
    assert ok.status_code == 302


def test_which_split_a_file_name_names():
    from annotation.forms_import import split_named_by

    assert split_named_by("train.jsonl") == "train"
    assert split_named_by("/tmp/detectbench-dev_v1.3.jsonl") == "dev"
    assert split_named_by("Pilot.jsonl", known=["pilot"]) == "pilot"
    assert split_named_by("contest.jsonl") is None and split_named_by("items.jsonl") is None
