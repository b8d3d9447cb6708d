"""The live monitor: an item whose content changed while the study ran can use up its raters with fewer than R
answers on its current content (one answer at v1, the item edited, two at v2: the hand-out calls it complete, a
fourth participant finds the study full and kappa leaves the item out). The monitor lists such an item as soon as
it can no longer reach R answers on its current content, so a researcher can act."""
from __future__ import annotations

import pytest

from annotation.models import Item
from annotation.services.items import item_update
from studies.models import Attempt, AttemptStatus
from studies.selectors.monitor import study_monitor
from studies.selectors.results import study_results
from studies.services import question_open, response_submit
from tests.studies.conftest import started_attempt

pytestmark = pytest.mark.django_db


def _answer_all(study, pid: str) -> Attempt:
    attempt = started_attempt(study, pid)
    while (question := question_open(attempt=Attempt.objects.select_related("study").get(pk=attempt.pk))):
        key = Item.objects.get(pk=question.lease.item_id).answer_index
        response_submit(token=attempt.token, position=question.lease.position, chosen_option=key)
    return attempt


def test_an_item_edited_mid_study_is_listed_short_of_raters_on_its_current_content(make_study, annotator):
    study = make_study(n_items=2, per_participant=2, raters=3)
    _answer_all(study, "first")
    edited = Item.objects.get(pk=study.pool.order_by("position").first().item_id)
    item_update(item_id=edited.pk, base_version=edited.version, changes={"question": edited.question + " Why?"},
                user=annotator)
    # Already now: one of its three places went to the earlier content, so it can end with two at most.
    early = study_monitor(study)
    assert [p.item_id for p in early["short_items"]] == [edited.pk]
    assert early["complete_items"] == 0

    _answer_all(study, "second")
    _answer_all(study, "third")
    assert started_attempt(study, "fourth").status == AttemptStatus.FULL
    monitor = study_monitor(study)
    pool = {p.item_id: p for p in monitor["pool"]}
    assert monitor["complete_items"] == 2  # the hand-out's view: every place used
    assert (pool[edited.pk].n_answered, pool[edited.pk].n_current, pool[edited.pk].n_earlier) == (3, 2, 1)
    assert [p.item_id for p in monitor["short_items"]] == [edited.pk] and monitor["raters"] == 3
    other = next(pk for pk in pool if pk != edited.pk)
    assert (pool[other].n_answered, pool[other].n_current, pool[other].n_earlier) == (3, 3, 0)
    assert study_results(study).kappa_items == 1  # kappa leaves the edited item out: the monitor says why


def test_an_item_still_filling_is_not_listed(make_study, annotator):
    """Open places that can still bring an item to R answers on its current content: no warning."""
    study = make_study(n_items=2, per_participant=1, raters=2)
    _answer_all(study, "first")
    monitor = study_monitor(study)
    assert monitor["short_items"] == [] and sum(p.n_answered for p in monitor["pool"]) == 1
