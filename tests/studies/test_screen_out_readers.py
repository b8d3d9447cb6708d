"""A screened-out participant's answers are kept but counted nowhere: the proof discovers the readers as the preview's
proof does (every read of the project's selectors and setup checks that takes a study, its slug, id or items, and
every page and API address that takes only a study's slug: tests/studies/test_preview.py), then changes the
screened-out participant's answers (every one flipped, then all deleted) and finds every read and page the same,
except the exports, which list every answer and mark these as screened out. Bonuses proposed from the results and
the one-scale fit leave them out too."""
from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models import F, Q
from django.test import Client

from evaluation.selectors.one_scale import one_scale
from studies.models import AttemptStatus, ParticipantLeaseStatus, Response, StudyItem
from studies.prolific import services as prolific
from studies.services import attempt_screen_out, question_open, response_submit

from .conftest import started_attempt
from .test_preview import _everything, _read_functions

#: Reads and addresses that list every lease and answer, one row each: they keep a screened-out attempt's answers,
#: marked (attempt_status "screened_out", lease_status "screened"); and the list of attempts (page and API), whose
#: row for the screened-out attempt says how many answers it gave.
LISTS_EVERY_ANSWER = (
    "study_export", "study_export_rows", "attempt_list", "/attempts/", "export.csv", "export.json", "/export/")


def _answer(attempt, n, option=None):
    for _ in range(n):
        q = question_open(attempt=attempt)
        if q is None:
            return
        response_submit(token=attempt.token, position=q.lease.position,
                        chosen_option=q.lease.item.answer_index if option is None else option)


@pytest.fixture
def study_with_a_screen_out(make_study):
    study = make_study(n_items=6, per_participant=3, raters=2, bonus_per_correct="0.50", screen_out_code="SO-1")
    for pid in ("real-1", "real-2"):
        _answer(started_attempt(study, pid), 3)
    screened = started_attempt(study, "screened-1")
    _answer(screened, 2)  # right on both: counted, they would move accuracy, majority and bonus
    attempt_screen_out(attempt_id=screened.pk, reason="Failed the attention check.")
    return study, screened


def _differences(before: dict, after: dict) -> list[str]:
    changed = []
    for part in ("reads", "pages"):
        changed += [k for k in before[part] if before[part][k] != after[part].get(k)]
    return changed


def test_a_screened_out_participants_answers_are_in_no_result_quota_bonus_or_leaderboard(
        client: Client, researcher, study_with_a_screen_out):
    study, screened = study_with_a_screen_out
    client.force_login(researcher)
    reads = _read_functions()
    for name in ("study_results", "study_monitor", "study_has_room", "response_outcomes", "response_rows",
                 "item_answers", "study_export_rows"):
        assert any(found.endswith("." + name) for found in reads), (name, sorted(reads))
    assert Response.objects.filter(attempt=screened).count() == 2  # kept
    assert set(screened.leases.values_list("status", flat=True)) == {ParticipantLeaseStatus.SCREENED_OUT}
    assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 6  # 2 x 3 counted, no more

    before = _everything(client, study)
    assert _everything(client, study) == before
    split_fit = one_scale(split="test").as_json()
    with transaction.atomic():  # every answer of the screened-out participant flipped: right <-> wrong
        Response.objects.filter(attempt=screened).update(is_correct=~Q(is_correct=True),
                                                         chosen_option=F("chosen_option") + 1)
        flipped = _everything(client, study)
        assert one_scale(split="test").as_json() == split_fit
        transaction.set_rollback(True)
    with transaction.atomic():  # and gone
        Response.objects.filter(attempt=screened).delete()
        deleted = _everything(client, study)
        transaction.set_rollback(True)
    for after in (flipped, deleted):
        changed = _differences(before, after)
        assert changed, "the exports list the screened-out participant's answers"
        unexpected = [k for k in changed if not any(marker in k for marker in LISTS_EVERY_ANSWER)]
        assert not unexpected, f"a screened-out participant's answers count in {unexpected}"

    rows = [r for r in before["reads"]["studies.selectors.exports.study_export_rows"]
            if r["attempt_id"] == screened.pk]
    assert len(rows) == 3 and {r["attempt_status"] for r in rows} == {AttemptStatus.SCREENED_OUT}
    assert {r["lease_status"] for r in rows} == {ParticipantLeaseStatus.SCREENED_OUT}
    assert sum(r["record"] == "response" for r in rows) == 2


def test_bonuses_are_proposed_for_the_counted_participants_only(study_with_a_screen_out):
    study, screened = study_with_a_screen_out
    prolific.connection_set(study_id=study.pk, prolific_study_id="p-study-1", token_env="PROLIFIC_TOKEN_SO")
    batch = prolific.bonus_batch_propose(study_id=study.pk)
    assert set(batch.payments.values_list("participant_id", flat=True)) == {"real-1", "real-2"}
    assert screened.pk not in set(batch.payments.values_list("attempt_id", flat=True))
