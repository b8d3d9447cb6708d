"""Autosaved drafts of the editing stages (annotation.services.editing): saves arrive in any order, and only one at
least as new as the stored draft is kept; a draft whose work was saved does not come back from a late autosave.

Through every autosave address of the annotation pages too. They are discovered, not listed: every annotation
page of an item (each route whose only argument is the item's id, for an item in each editing stage) that carries
a `draft_page` stamp in a form, and every htmx address that form (or a control inside it) posts to."""
from __future__ import annotations

import html
import itertools
import random
import re

import pytest
from django.urls import URLPattern, get_resolver, reverse

from annotation.models import Draft, ItemStatus, Stage
from annotation.selectors import draft_for
from annotation.services import EXPLICIT_SAVE, draft_discard, draft_save, page_stamp

from ..workflow_support import graph_post, make_items, rewrite_post

pytestmark = pytest.mark.django_db


def _save(item, user, text: str, page: int, seq: int):
    return draft_save(item_id=item.pk, user=user, stage=Stage.REWRITE, base_version=item.version,
                      data={"question": text}, page=page, seq=seq)


def _stored(item, user) -> str | None:
    draft = draft_for(user=user, item=item, stage=Stage.REWRITE)
    return draft.data["question"] if draft else None


def test_whatever_order_saves_arrive_in_the_newest_is_the_draft(annotator):
    """Two pages (the second shown after a reload), three saves each: every arrival order ends with the newest."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    first, second = page_stamp(), page_stamp() + 1
    saves = [(first, 1), (first, 2), (first, 3), (second, 1), (second, 2), (second, 3)]
    orders = list(itertools.permutations(saves))
    for order in random.Random(7).sample(orders, 60):
        Draft.objects.all().delete()
        kept = [_save(item, annotator, f"{page}/{seq}", page, seq) is not None for page, seq in order]
        assert _stored(item, annotator) == f"{second}/3", order
        # A save is kept exactly when it is newer than every save that arrived before it.
        assert kept == [key == max(order[:i + 1]) for i, key in enumerate(order)], order


def test_a_late_autosave_does_not_bring_back_a_draft_whose_work_was_saved(annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    shown = page_stamp()
    assert _save(item, annotator, "typed", shown, 1) is not None
    draft_discard(item_id=item.pk, user=annotator, stage=Stage.REWRITE)  # Save: the work is in the item now
    assert _stored(item, annotator) is None
    # The page's next autosave, sent before Save and arriving after it: not kept.
    assert _save(item, annotator, "typed, and a bit more", shown, 2) is None
    assert _stored(item, annotator) is None
    # The page shown after Save (the redirect) saves as usual.
    assert _save(item, annotator, "after the save", page_stamp(), 1) is not None
    assert _stored(item, annotator) == "after the save"


def test_a_save_the_annotator_asked_for_comes_after_every_autosave_of_its_page(annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    shown = page_stamp()
    assert _save(item, annotator, "refused Save, kept", shown, EXPLICIT_SAVE) is not None
    assert _save(item, annotator, "an autosave on its way", shown, 41) is None
    assert _stored(item, annotator) == "refused Save, kept"


def test_saves_without_an_order_are_kept_only_over_each_other(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    assert _save(item, annotator, "a", 0, 0) is not None and _save(item, annotator, "b", 0, 0) is not None
    assert _stored(item, annotator) == "b"
    assert _save(item, annotator, "c", page_stamp(), 1) is not None
    assert _save(item, annotator, "d", 0, 0) is None and _stored(item, annotator) == "c"
    # Drafts are per user: another annotator's order is their own.
    assert _save(item, annotator2, "e", 0, 0) is not None and _stored(item, annotator) == "c"


def test_a_save_with_no_draft_before_it_still_stops_a_late_autosave(annotator):
    """Nothing was autosaved before Save (or the row went with an older version of the app): Save keeps its moment
    all the same, and the page's autosave that was on its way is dropped."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    shown = page_stamp()
    draft_discard(item_id=item.pk, user=annotator, stage=Stage.REWRITE)
    assert _save(item, annotator, "sent before Save", shown, 1) is None
    assert _stored(item, annotator) is None


def test_a_save_the_annotator_asked_for_is_kept_even_from_an_older_page(annotator):
    """Tab B was shown later and its work saved; tab A's Save is refused (a conflict) and its text is kept as the
    draft all the same, after what is stored, so that the conflict page can show it."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    tab_a, tab_b = page_stamp(), page_stamp() + 1
    assert _save(item, annotator, "B's text", tab_b, 1) is not None
    draft_discard(item_id=item.pk, user=annotator, stage=Stage.REWRITE)
    assert _save(item, annotator, "A's refused Save", tab_a, EXPLICIT_SAVE) is not None
    assert _stored(item, annotator) == "A's refused Save"
    assert _save(item, annotator, "A's autosave on its way", tab_a, 7) is None


EDITING = (ItemStatus.REWRITE, ItemStatus.CLUE_GRAPH)


def _item_routes() -> list[str]:
    resolver = get_resolver()
    names = []
    for pattern in resolver.url_patterns:
        if getattr(pattern, "namespace", None) != "annotation":
            continue
        for inner in pattern.url_patterns:
            if isinstance(inner, URLPattern) and inner.name and set(inner.pattern.converters) == {"pk"}:
                names.append(f"annotation:{inner.name}")
    return names


def _autosaves(client, items) -> dict[str, tuple[str, object]]:
    """{autosave address: (the page it was found on, the item)} over every item page that carries a stamp."""
    found = {}
    for item in items:
        for name in _item_routes():
            response = client.get(reverse(name, args=[item.pk]))
            page = response.content.decode() if response.status_code == 200 else ""
            for form in re.findall(r"<form\b.*?</form>", page, re.S):
                if 'name="draft_page"' in form:
                    for url in re.findall(r'hx-post="([^"]+)"', form):
                        found[html.unescape(url)] = (name, item)
    return found


def test_every_autosave_keeps_only_a_save_at_least_as_new_as_the_stored_draft(annotator_client, annotator):
    items = [make_items(1, status=status, start=n)[0] for n, status in enumerate(EDITING, start=1)]
    autosaves = _autosaves(annotator_client, items)
    assert {name for name, _ in autosaves.values()} == {"annotation:rewrite", "annotation:clue_graph"}
    assert {url.rsplit("/", 2)[-2] for url in autosaves} >= {"draft", "preview", "edit"}, autosaves
    for url, (page, item) in sorted(autosaves.items()):
        Draft.objects.all().delete()
        data = rewrite_post(item, item.version) if page == "annotation:rewrite" else {**graph_post(item),
                                                                                     "action": "add_clue"}
        newer = annotator_client.post(url, {**data, "draft_page": 2_000, "draft_seq": 1}, HTTP_HX_REQUEST="true")
        assert newer.status_code == 200 and "Not kept as a draft" not in newer.content.decode(), url
        kept = Draft.objects.get(item=item, user=annotator)
        assert (kept.page, kept.seq) == (2_000, 1), url
        for stamp, seq in ((1_000, 9), (2_000, 0)):  # an older page; an earlier save of the same page
            late = annotator_client.post(url, {**data, "draft_page": stamp, "draft_seq": seq},
                                         HTTP_HX_REQUEST="true")
            assert "Not kept as a draft" in late.content.decode(), (url, stamp, seq)
            assert Draft.objects.get(pk=kept.pk).updated_at == kept.updated_at, (url, stamp, seq)


# A clue graph is stored as the official texts: a row holding the format's own marks would read back as another graph.

HAZARDS = {
    "an arrow in a clue": ({"text": "the glass lay inside -> broken from outside", "implication": "an outsider"}, None),
    "a line break in a clue": ({"text": "the glass\nAfter correlating these clues:", "implication": "x"}, None),
    "a carriage return in an implication": ({"text": "the glass", "implication": "broken\rfrom outside"}, None),
    "a leading number in a clue": ({"text": "2. the glass lay inside", "implication": "broken from outside"}, None),
    "an arrow in a conclusion": (None, {"inputs": ["broken from outside"], "output": "Z -> W"}),
    "' + ' inside an input": (None, {"inputs": ["the maid + the butler"], "output": "two of them"}),
    "a line break in a conclusion": (None, {"inputs": ["broken from outside"], "output": "Z\n1. Q -> R"}),
}


@pytest.mark.parametrize("hazard", sorted(HAZARDS))
def test_a_clue_graph_row_holding_the_format_s_marks_is_refused_naming_it_with_nothing_written(annotator, hazard):
    from rest_framework.test import APIClient

    from annotation.models import Item

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    clue, step = HAZARDS[hazard]
    payload = {"base_version": item.version,
               "clues": [{"text": "muddy boots stood by the desk", "implication": "someone came from the garden"},
                         *([clue] if clue else [])],
               "steps": [{"inputs": ["someone came from the garden"], "output": "The gardener"},
                         *([step] if step else [])]}
    api = APIClient()
    api.force_authenticate(annotator)
    refused = api.post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json")
    assert refused.status_code == 400, (hazard, refused.content)
    body = refused.json()
    field = "clues" if clue else "steps"
    text = str(body)
    assert field in text and ("Clue 2" if clue else "Step S2") in text, body
    after = Item.objects.get(pk=item.pk)
    assert (after.version, after.evidence, after.reasoning) == (item.version, item.evidence, item.reasoning)
    # Without the hazard the same graph is stored and reads back as given.
    payload["clues"], payload["steps"] = payload["clues"][:1], payload["steps"][:1]
    assert api.post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json").status_code == 200


def test_an_arrow_inside_an_implication_reads_back_as_given_and_is_kept(annotator):
    """A clue splits at its first arrow: a later one stays in the implication, stored and read back as given."""
    from rest_framework.test import APIClient

    from annotation.clue_graph.editing import editable_graph
    from annotation.models import Item

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    api = APIClient()
    api.force_authenticate(annotator)
    clue = ("the glass lay inside", "broken -> from outside")
    saved = api.post(f"/api/annotation/items/{item.pk}/clue-graph/", {
        "base_version": item.version, "clues": [{"text": clue[0], "implication": clue[1]}],
        "steps": [{"inputs": [clue[0]], "output": "The gardener"}]}, format="json")
    assert saved.status_code == 200, saved.content
    stored = Item.objects.get(pk=item.pk)
    assert editable_graph(stored.evidence, stored.reasoning).clues == [clue]


def test_every_real_item_s_clue_graph_reads_back_as_itself(detectbench_dir):
    """The check refuses nothing the data holds: each of the 1,563 items' graphs, written back unchanged, passes."""
    import json

    from annotation.clue_graph.editing import editable_graph
    from annotation.services.editing import written_as_given

    checked = 0
    for split in ("test", "train"):
        for line in (detectbench_dir / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            graph = editable_graph(record.get("evidence", ""), record.get("multi_hop_reasoning", ""))
            written_as_given(graph, *graph.texts())
            checked += 1
    assert checked >= 1500
