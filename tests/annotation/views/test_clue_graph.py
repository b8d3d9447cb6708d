"""The clue-graph screen (annotation.views.clue_graph): real-data flags, one-click and selection fixes,
export, preview, stale saves, refused input."""
from __future__ import annotations

import io
import json
import re

import pytest
from django.urls import reverse

from annotation import clue_graph
from annotation.dataformat import parse_jsonl
from annotation.forms import MAX_GRAPH_TEXT
from annotation.models import Draft, Item, ItemStatus
from annotation.services import items_export

from ..workflow_support import graph_post, make_items

pytestmark = pytest.mark.django_db


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

    data = graph_post(item)
    data["action"] = f"fix:{index}:{anchor.start}:{anchor.end}"
    editor = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data,
                                   HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in editor and 'id="cg-editor"' in editor
    assert f'id="anchor-{index}" data-state="exact"' in editor
    assert Draft.objects.filter(item=item).exists()  # the fix is autosaved as a draft at once

    data = graph_post(item)
    data["clue_text"][index] = item.context[anchor.start:anchor.end]
    assert annotator_client.post(url, data).status_code == 302
    item.refresh_from_db()
    fixed = clue_graph.parse_clue_graph(item.evidence, item.reasoning).clues[index].text
    assert fixed in item.context
    assert clue_graph.anchor_clues([fixed], item.context)[0].exact
    assert not Draft.objects.filter(item=item, data__isnull=False).exists()  # saved: no draft left to restore

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
    data = graph_post(item)
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
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    data = graph_post(item)
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

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    a, b = Client(), Client()
    a.force_login(annotator)
    b.force_login(annotator2)
    data_a, data_b = graph_post(item), graph_post(item)
    data_a["clue_implication"][0] = "a visitor came from the garden"
    data_b["clue_implication"][0] = "the gardener walked in"
    url = reverse("annotation:clue_graph", args=[item.pk])
    assert a.post(url, data_a).status_code == 302
    refused = b.post(url, data_b)
    assert refused.status_code == 302 and refused["Location"] == f"{url}?conflict={item.version}"  # no re-post
    page = b.get(refused["Location"]).content.decode()
    assert "visitor" in page and "someone else changed this item" in page
    assert "the gardener walked in" in page  # the refused text is back in the editor
    assert f'name="base_version" value="{item.version + 1}"' in page  # a second save, after seeing it, may go on top
    assert Draft.objects.get(user=annotator2, item=item).data["clues"][0][1] == "the gardener walked in"


def test_clue_graph_page_refuses_damaged_input_and_keeps_the_text(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    url = reverse("annotation:clue_graph", args=[item.pk])
    for meta in ("{not json", json.dumps({"evidence_steps": [[1, 2, 3]]}), json.dumps({"clues": 5}), "[]"):
        data = graph_post(item)
        data["meta"] = meta
        response = annotator_client.post(url, data)
        if meta == json.dumps({"clues": 5}):  # unknown keys are ignored
            assert response.status_code == 302
            item.refresh_from_db()
            continue
        assert response.status_code == 400, meta
        assert "hidden state is damaged" in response.content.decode()
    data = graph_post(item)
    data["base_version"] = "abc"
    assert annotator_client.post(url, data).status_code == 400
    data = graph_post(item)
    data["clue_text"][0] = "z" * (MAX_GRAPH_TEXT + 1)
    data["step_output"][0] = "w" * (MAX_GRAPH_TEXT + 5)
    response = annotator_client.post(url, data)
    page = response.content.decode()
    assert response.status_code == 400
    assert f"Clue 1: at most {MAX_GRAPH_TEXT} characters" in page and "Conclusion of step S1" in page
    assert "z" * (MAX_GRAPH_TEXT + 1) in page  # the annotator's text is still in the editor
    version = item.version
    item.refresh_from_db()
    assert item.version == version


def test_clue_graph_htmx_calls_refuse_bad_input_without_500(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    preview = reverse("annotation:clue_graph_preview", args=[item.pk])
    edit = reverse("annotation:clue_graph_edit", args=[item.pk])
    data = graph_post(item)
    data["clue_implication"][1] = "i" * (MAX_GRAPH_TEXT + 1)
    for url in (preview, edit):
        response = annotator_client.post(url, data, HTTP_HX_REQUEST="true")
        assert response.status_code == 422 and response["HX-Retarget"] == "#cg-preview"
        assert "Implication of clue 2: at most" in response.content.decode()
    data = graph_post(item)
    del data["base_version"]
    assert "Base version: This field is required." in annotator_client.post(preview, data).content.decode()
    assert not Draft.objects.filter(item=item).exists()  # no draft without the version it started from
    for action, extra in (("fix:a:b", {}), ("fix:1", {}), ("select", {"fix_clue": "", "fix_start": "x"}),
                          ("select", {"fix_clue": "7", "fix_start": "0", "fix_end": "4"}), ("remove_clue:99", {})):
        response = annotator_client.post(edit, {**graph_post(item), "action": action, **extra})
        assert response.status_code == 200, action
    assert "pick the text again" in annotator_client.post(edit, {**graph_post(item), "action": "fix:a:b"}).content.decode()


def _texts(response):
    from tests.support.page_text import visible_text

    return visible_text(response)


def test_row_badges_follow_the_preview_and_no_problems_only_when_every_clue_is_verbatim(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    page = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk]))
    html, text = page.content.decode(), _texts(page)
    # Clue 1 is verbatim, clue 3 only approximately in the story: the row badge and the anchoring list say so alike.
    assert 'id="clue-state-0">verbatim</span>' in html and 'id="clue-state-2">approximate</span>' in html
    assert 'id="anchor-2" data-state="fuzzy"' in html and re.search(r"approximate \(0\.\d\d\) — best span", text)
    assert "No problems found" not in text and not re.search(r"\bexact\b", text)  # a badge says "verbatim"
    assert "Clue only approximately in the context: clue 3 (see Anchoring above)" in text
    data = graph_post(item)
    data["clue_text"][0] = "muddy boots were standing next to the desk"  # a paraphrase: only approximate now
    preview = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]), data,
                                    HTTP_HX_REQUEST="true").content.decode()
    assert 'id="clue-state-0" hx-swap-oob="true">approximate</span>' in preview  # the editor's badge follows
    assert 'id="anchor-0" data-state="fuzzy"' in preview
    assert "Clue only approximately in the context: clue 1" in _texts(preview)
    # Every clue verbatim, every clue used, the last step names the answer: now there is nothing to report.
    data = graph_post(item)
    data.update({"clue_text": data["clue_text"][:2], "clue_implication": data["clue_implication"][:2]})
    clear = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]), data,
                                  HTTP_HX_REQUEST="true")
    assert "No problems found: every clue is verbatim in the context and the steps reach the answer." in _texts(clear)


def test_step_inputs_are_the_real_inputs_with_what_each_refers_to(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    data = graph_post(item)
    data["step_0_inputs"] = ["someone came in from the garden", "the moon was full"]
    response = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data)
    html, text = response.content.decode(), _texts(response)
    assert "<select" not in html and "step_0_extra" not in html
    assert 'name="step_0_inputs" value="someone came in from the garden"' in html
    assert 'name="step_0_inputs" value="the moon was full"' in html
    assert "→ clue 1" in text and "refers to nothing (a dangling reference)" in text
    # The checks say the same as the note: the unknown input is the dangling one; no raw codes on the page.
    assert "Step input that refers to nothing: step input 'the moon was full'" in text
    for code in ("dangling_reference:", "fuzzy_clue:", "unanchored_clue:", "unused_clue:"):
        assert code not in text
    # Saving keeps exactly those inputs (the empty "another input" field adds nothing).
    data["step_0_inputs"] = ["someone came in from the garden", "the gardener could lock the door", ""]
    assert annotator_client.post(reverse("annotation:clue_graph", args=[item.pk]), data).status_code == 302
    item.refresh_from_db()
    assert "someone came in from the garden + the gardener could lock the door -> The gardener" in item.reasoning


def test_a_refused_clue_graph_save_redirects_and_keeps_the_graph(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.PUBLISHED)
    data = graph_post(item)
    data["clue_implication"][0] = "kept although refused"
    url = reverse("annotation:clue_graph", args=[item.pk])
    refused = annotator_client.post(url, data)
    assert refused.status_code == 302 and refused["Location"] == f"{url}?refused=1"
    page = annotator_client.get(refused["Location"])
    assert "Not saved:" in _texts(page) and 'value="kept although refused"' in page.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["clues"][0][1] == "kept although refused"


def test_the_clue_graph_page_shows_rules_3_1_to_3_3_and_the_question_above_the_editor(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    html = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    text = _texts(html)
    assert 'href="#rule-31"' in html and 'id="rule-31"' in html
    assert "3.1 Regenerate or rewrite if the “Key Information of Context” cannot exactly match" in text
    assert "3.2 Regenerate or rewrite if the connection or reasoning is redundant." in text
    assert "3.3 Delete the question or rewrite it" in text
    assert html.index('id="cg-question"') < html.index('id="cg-editor"')


def test_the_drawing_has_the_question_and_answer_above_it_and_follows_the_preview(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    html = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    card = html[html.index('id="graph-card"'):]
    assert card.index(item.question) < card.index('id="graph-picture"') and "The gardener" in card[:card.index("<svg")]
    preview = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]), graph_post(item),
                                    HTTP_HX_REQUEST="true").content.decode()
    assert 'id="graph-card" hx-swap-oob="true"' in preview and 'id="graph-picture"' in preview


def test_a_clue_spanning_most_of_the_context_is_a_warning_not_no_problems(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    data = graph_post(item)
    # Every clue verbatim and used, the answer reached: nothing to report ...
    data.update({"clue_text": data["clue_text"][:2], "clue_implication": data["clue_implication"][:2]})
    url = reverse("annotation:clue_graph_preview", args=[item.pk])
    assert "No problems found" in _texts(annotator_client.post(url, data, HTTP_HX_REQUEST="true"))
    # ... until clue 1 is most of the story (verbatim, still used by the step through its implication).
    data["clue_text"][0] = item.context[:int(len(item.context) * 0.8)]
    text = _texts(annotator_client.post(url, data, HTTP_HX_REQUEST="true"))
    assert "No problems found" not in text
    assert "Clue that covers most of the context: clue 1 covers 80% of the context" in text
    # The reviewer sees it too.
    data["note"] = ""
    assert annotator_client.post(reverse("annotation:clue_graph", args=[item.pk]), data).status_code == 302
    item.refresh_from_db()
    item.status = ItemStatus.REVIEW
    item.save(update_fields=["status"])
    review = _texts(annotator_client.get(reverse("annotation:review", args=[item.pk])))
    assert "Clue that covers most of the context: clue 1 covers 80%" in review


def test_every_out_of_band_swap_of_the_preview_has_its_target_on_the_page(annotator_client):
    """Typing a new reasoning-step input into the empty field: the preview's note for it replaces an element of
    the page (htmx:oobErrorNoTarget in the console before)."""
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    page = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    ids_on_page = set(re.findall(r'\bid="([^"]+)"', page))
    data = graph_post(item)
    data["step_0_inputs"] = [*data["step_0_inputs"], "the moon was full"]  # typed into "another input"
    preview = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]), data,
                                    HTTP_HX_REQUEST="true").content.decode()
    oob = re.findall(r'\bid="([^"]+)" hx-swap-oob="true"', preview)
    assert "step-0-input-2-note" in oob and "graph-card" in oob
    assert set(oob) <= ids_on_page, set(oob) - ids_on_page


def test_the_editor_keeps_its_page_stamp_and_a_late_autosave_after_save_is_not_kept(annotator_client, annotator):
    """A row action redraws the editor (htmx) inside the same page: it keeps the stamp the page was shown with, so
    the page's autosaves stay in order. An autosave sent before Save and arriving after it is not kept."""
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    url = reverse("annotation:clue_graph", args=[item.pk])
    shown = int(re.search(r'name="draft_page" value="(\d+)"', annotator_client.get(url).content.decode()).group(1))
    data = {**graph_post(item), "draft_page": shown, "draft_seq": 1, "action": "add_clue"}
    editor = annotator_client.post(reverse("annotation:clue_graph_edit", args=[item.pk]), data,
                                   HTTP_HX_REQUEST="true").content.decode()
    assert f'name="draft_page" value="{shown}"' in editor and "Draft saved" in editor
    assert Draft.objects.get(item=item, user=annotator).seq == 1

    assert annotator_client.post(url, {**graph_post(item), "draft_page": shown}).status_code == 302  # Save
    late = annotator_client.post(reverse("annotation:clue_graph_preview", args=[item.pk]),
                                 {**graph_post(item), "draft_page": shown, "draft_seq": 2},
                                 HTTP_HX_REQUEST="true").content.decode()
    assert "Not kept as a draft" in late and "Draft saved" not in late
    assert not Draft.objects.filter(item=item, data__isnull=False).exists()
    assert "Restored your unsaved draft" not in annotator_client.get(url).content.decode()


def test_a_refused_save_from_an_older_tab_keeps_its_graph(annotator):
    """Two tabs of one annotator: the newer one's graph is saved; the older one's Save is refused (the item changed)
    and its graph is kept as the draft, not lost."""
    from ..workflow_support import client_for

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    older, newer = client_for(annotator), client_for(annotator)
    url = reverse("annotation:clue_graph", args=[item.pk])

    def stamp(client) -> int:
        return int(re.search(r'name="draft_page" value="(\d+)"', client.get(url).content.decode()).group(1))

    stamp_a, stamp_b = stamp(older), stamp(newer)
    assert "no-store" in newer.get(url)["Cache-Control"]  # Back asks again: a cached page has an outdated stamp
    saved = {**graph_post(item), "draft_page": stamp_b}
    saved["clue_text"] = [*saved["clue_text"][:-1], "saved in the newer tab"]
    assert newer.post(url, saved).status_code == 302
    refused = {**graph_post(item), "draft_page": stamp_a}
    refused["clue_text"] = [*refused["clue_text"][:-1], "typed in the older tab"]
    response = older.post(url, refused)
    assert response.status_code == 302 and "conflict=" in response["Location"]
    assert Draft.objects.get(user=annotator, item=item).data["clues"][-1][0] == "typed in the older tab"


def test_the_editor_refuses_a_clue_holding_an_arrow_naming_it_and_keeps_the_text_as_a_draft(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    data = graph_post(item)
    data["clue_text"] = ["the glass lay inside -> broken from outside", *data["clue_text"][1:]]
    url = reverse("annotation:clue_graph", args=[item.pk])
    refused = annotator_client.post(url, data, follow=True)
    page = refused.content.decode()
    assert "Not saved: Clue 1 (“the glass lay inside -&gt; broken from outside" in page
    stored = Item.objects.get(pk=item.pk)
    assert (stored.version, stored.evidence) == (item.version, item.evidence)
    draft = Draft.objects.get(item=item, user=annotator)
    assert draft.data["clues"][0][0] == "the glass lay inside -> broken from outside"
