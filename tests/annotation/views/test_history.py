"""History and revert (annotation.views.history)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import ItemRevision, ItemStatus

from ..workflow_support import make_items, rewrite_post

pytestmark = pytest.mark.django_db


def test_history_shows_diffs_and_revert_is_a_new_revision(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    annotator_client.post(url, rewrite_post(item, item.version, question="Changed question?"))
    item.refresh_from_db()
    history = annotator_client.get(reverse("annotation:history", args=[item.pk])).content.decode()
    assert "<ins>Changed</ins>" in history or "Changed" in history
    stale = annotator_client.post(reverse("annotation:revert", args=[item.pk]), {"revision": 1, "base_version": 1})
    assert stale.status_code == 409
    ok = annotator_client.post(reverse("annotation:revert", args=[item.pk]),
                               {"revision": 1, "base_version": item.version})
    assert ok.status_code == 302
    item.refresh_from_db()
    assert item.version == 3 and item.question.startswith("Who entered the study?")
    assert ItemRevision.objects.filter(item=item).count() == 3
    assert "reverted to revision 1" in ItemRevision.objects.get(item=item, number=3).note
