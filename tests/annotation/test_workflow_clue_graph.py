"""The clue-graph screen on the real DetectBench test split: flags, one-click fix, selection fix, export."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import clue_graph
from annotation.dataformat import parse_jsonl
from annotation.models import Draft, Item, ItemStatus
from annotation.services import items_export

from .test_workflow_pages import _graph_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def real_items(detectbench_dir):
    call_command("import_items", str(detectbench_dir / "test.jsonl"), "--split", "test", stdout=io.StringIO())
    Item.objects.update(status=ItemStatus.CLUE_GRAPH)
    return Item.objects.order_by("pk")


def _first_with_fuzzy_clue(items):
    for item in items[:200]:
        graph = clue_graph.parse_clue_graph(item.evidence, item.reasoning)
        for i, anchor in enumerate(clue_graph.anchor_clues(graph.clues, item.context)):
            if anchor is not None and not anchor.exact:
                return item, i, anchor
    raise AssertionError("no fuzzy clue in the first 200 records")


def test_real_items_one_click_fix_makes_the_clue_verbatim_and_export_stays_valid(real_items, annotator_client):
    assert real_items.count() == 1196
    item, index, anchor = _first_with_fuzzy_clue(real_items)
    url = reverse("annotation:clue_graph", args=[item.pk])
    page = annotator_client.get(url).content.decode()
    assert 'data-state="fuzzy"' in page or 'data-state="unanchored"' in page
    assert f'value="fix:{index}:{anchor.start}:{anchor.end}"' in page  # the one-click fix of the flagged clue
    assert "<svg" in page

    data = _graph_post(item)
    data["action"] = f"fix:{index}:{anchor.start}:{anchor.end}"
    editor = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data,
                                   HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in editor and 'id="cg-editor"' in editor
    assert f'id="anchor-{index}" data-state="exact"' in editor
    assert Draft.objects.filter(item=item).exists()  # the fix is autosaved as a draft at once

    data = _graph_post(item)
    data["clue_text"][index] = item.context[anchor.start:anchor.end]
    assert annotator_client.post(url, data).status_code == 302
    item.refresh_from_db()
    fixed = clue_graph.parse_clue_graph(item.evidence, item.reasoning).clues[index].text
    assert fixed in item.context
    assert clue_graph.anchor_clues([fixed], item.context)[0].exact
    assert not Draft.objects.filter(item=item).exists()

    out = io.StringIO()
    assert items_export(items=Item.objects.order_by("pk"), out=out) == 1196
    parsed = parse_jsonl(io.BytesIO(out.getvalue().encode()), file="export.jsonl")
    assert parsed.errors == [] and len(parsed.records) == 1196
    exported = next(r for r in parsed.records if r.external_id == item.external_id)
    assert fixed in clue_graph.gold_key_information(exported.evidence)


def test_share_of_real_items_flagged(real_items, annotator_client):
    flagged = 0
    sample = list(real_items[:100])
    for item in sample:
        issues = clue_graph.check_graph(clue_graph.parse_clue_graph(item.evidence, item.reasoning), item.context)
        flagged += any(i.kind in ("unanchored_clue", "fuzzy_clue") for i in issues)
    assert flagged >= 90  # the English release is translated: most clues are not verbatim


def test_selection_fix_uses_the_selected_context_text(real_items, annotator_client):
    item = real_items.first()
    words = item.context.split(". ")[0]
    start = item.context.index(words)
    data = _graph_post(item)
    data.update({"action": "select", "fix_clue": 0, "fix_start": start, "fix_end": start + len(words),
                 "fix_text": words})
    editor = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data).content.decode()
    assert 'id="anchor-0" data-state="exact"' in editor
    # Offsets that drifted are repaired by searching the selected text.
    data.update({"fix_start": 0, "fix_end": 3})
    editor = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data).content.decode()
    assert 'id="anchor-0" data-state="exact"' in editor
    data.update({"fix_text": "text that is not in the story at all"})
    assert "not part of the context" in annotator_client.post(
        reverse("annotation:clue_graph_edit", args=[item.pk]), data).content.decode()


def test_preview_redraws_svg_and_checks_after_an_edit(annotator_client):
    from .workflow_support import make_items

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    data = _graph_post(item)
    first = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]), data,
                                  HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in first and 'data-nodes="' in first
    assert "unused_clue" in first  # clue 3 is not used by any step
    data["step_output"] = ["someone else"]
    second = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]), data).content.decode()
    assert "no_answer" in second and first != second
    data["action"] = "add_step"
    editor = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data).content.decode()
    assert 'id="step-1"' in editor


def test_stale_clue_graph_save_is_refused_and_kept_as_draft(annotator, annotator2):
    from django.test import Client

    from .workflow_support import make_items

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    a, b = Client(), Client()
    a.force_login(annotator)
    b.force_login(annotator2)
    data_a, data_b = _graph_post(item), _graph_post(item)
    data_a["clue_implication"][0] = "a visitor came from the garden"
    data_b["clue_implication"][0] = "the gardener walked in"
    url = reverse("annotation:clue_graph", args=[item.pk])
    assert a.post(url, data_a).status_code == 302
    refused = b.post(url, data_b)
    assert refused.status_code == 409
    page = refused.content.decode()
    assert "visitor" in page and "someone else changed this item" in page
    assert f'name="base_version" value="{item.version + 1}"' in page  # a second save, after seeing it, may go on top
    assert Draft.objects.get(user=annotator2, item=item).data["clues"][0][1] == "the gardener walked in"
