"""Every autosave of the annotation pages keeps only a save at least as new as the stored draft (issue of late
arrivals: a request sent before a reload, or before Save, reaching the server after a newer one).

The autosave addresses are discovered, not listed: every annotation page of an item (each route whose only
argument is the item's id, for an item in each editing stage) that carries a `draft_page` stamp in a form, and
every htmx address that form (or a control inside it) posts to."""
from __future__ import annotations

import html
import re

import pytest
from django.urls import URLPattern, get_resolver, reverse

from annotation.models import Draft, ItemStatus

from .workflow_support import graph_post, make_items, rewrite_post

pytestmark = pytest.mark.django_db

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
        for page_stamp, seq in ((1_000, 9), (2_000, 0)):  # an older page; an earlier save of the same page
            late = annotator_client.post(url, {**data, "draft_page": page_stamp, "draft_seq": seq},
                                         HTTP_HX_REQUEST="true")
            assert "Not kept as a draft" in late.content.decode(), (url, page_stamp, seq)
            assert Draft.objects.get(pk=kept.pk).updated_at == kept.updated_at, (url, page_stamp, seq)
