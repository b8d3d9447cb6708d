"""Human labels for every code a page shows (annotation.templatetags.annotation_labels)."""
from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.clue_graph.checks import IssueKind
from annotation.models import Criterion, Decision, ItemStatus, ReviewAction
from annotation.templatetags.annotation_labels import ISSUE_LABELS, human
from tests.support.page_text import visible_text

from ..workflow_support import make_items


def test_every_code_has_a_label_in_words():
    codes = [*IssueKind, *Criterion.values, *Decision.values, *ItemStatus.values, *ReviewAction.values]
    assert set(ISSUE_LABELS) == set(IssueKind)  # a new issue kind fails here until it has a label
    for code in codes:
        label = str(human(code))
        assert label != str(code) and "_" not in label, code
    assert human("wrong_answer") == "1.4 The answer is not correct"
    assert human("fuzzy_clue") == "Clue only approximately in the context"
    assert human("dangling_reference") == "Step input that refers to nothing"
    assert human("something new") == "something new"


@pytest.mark.django_db
def test_the_item_page_shows_labels_not_codes(annotator_client):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    text = visible_text(annotator_client.get(reverse("annotation:item_detail", args=[item.pk])))
    assert "Clue only approximately in the context:" in text and "fuzzy_clue" not in text
    assert "unused_clue" not in text
