"""What every stage's page shares (annotation.views.common.stage_context, _stage_bar.html): the page says before any
typing that someone without a slot cannot change the item (its form inert, autosaves refused, no draft kept), and
whoever holds the item can give it back and skip to the next one from every stage, not only verification."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import AnnotatorLease, Draft, Stage
from annotation.services import lease_next

from ..workflow_support import client_for, graph_post, make_items, rewrite_post, set_k

pytestmark = pytest.mark.django_db

PAGES = {Stage.VERIFICATION: "annotation:verify", Stage.REWRITE: "annotation:rewrite",
         Stage.CLUE_GRAPH: "annotation:clue_graph"}
FORMS = {Stage.VERIFICATION: 'id="verify-form" inert', Stage.REWRITE: 'id="rewrite-form" inert',
         Stage.CLUE_GRAPH: 'id="cg-form" inert'}


@pytest.mark.parametrize("stage", list(PAGES))
def test_someone_without_a_slot_is_told_before_typing_and_nothing_they_send_is_kept(stage, annotator, annotator2):
    set_k(stage, 1)
    (item,) = make_items(1, status=stage, source=f"slot-{stage}")
    assert lease_next(user=annotator, stage=stage) is not None  # annotator holds the stage's one slot
    url = reverse(PAGES[stage], args=[item.pk])
    holder, other = client_for(annotator), client_for(annotator2)
    page = other.get(url).content.decode()
    assert 'id="no-slot"' in page and "already has 1 annotator" in page and FORMS[stage] in page
    assert 'id="no-slot"' not in holder.get(url).content.decode()
    if stage == Stage.REWRITE:
        sent = other.post(reverse("annotation:rewrite_draft", args=[item.pk]),
                          {**rewrite_post(item, item.version, question="Typed for nothing?"), "draft_page": "1"})
    elif stage == Stage.CLUE_GRAPH:
        sent = other.post(reverse("annotation:clue_graph_preview", args=[item.pk]),
                          {**graph_post(item), "draft_page": "1"}, HTTP_HX_REQUEST="true")
    else:
        return
    assert sent.status_code == 409 and "already has 1 annotator" in sent.content.decode()
    assert not Draft.objects.filter(user=annotator2, item=item).exists()


@pytest.mark.parametrize("stage", [Stage.REWRITE, Stage.CLUE_GRAPH, Stage.REVIEW])
def test_whoever_holds_the_item_can_give_it_back_and_skip_from_every_stage(stage, annotator):
    set_k(stage, 1)
    first, second = make_items(2, status=stage, source=f"skip-{stage}")
    lease = lease_next(user=annotator, stage=stage)
    client = client_for(annotator)
    page = client.get(reverse({**PAGES, Stage.REVIEW: "annotation:review"}[stage], args=[lease.item_id]))
    assert 'id="skip-button"' in page.content.decode()
    skipped = client.post(reverse("annotation:release", args=[lease.item_id, stage]), {"next": "1"})
    assert skipped.status_code == 302
    lease.refresh_from_db()
    assert lease.status == "released"
    held = AnnotatorLease.objects.get(annotator=annotator, stage=stage, status="leased")
    assert held.item_id != lease.item_id and held.item_id in (first.pk, second.pk)
