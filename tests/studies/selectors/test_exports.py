"""A participant's highlight drafts are in the researcher's exports (CSV, JSON, API): the passages marked on a question
before the answer was sent, and on the question a participant left unanswered."""
from __future__ import annotations

import csv
import io
import json

from django.urls import reverse

from studies.services import highlight_draft_save, question_open, response_submit
from tests.studies.conftest import started_attempt


def _csv_rows(client, study) -> list[dict]:
    body = b"".join(client.get(reverse("studies:study_export", args=[study.slug, "csv"])).streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def test_drafts_of_answered_and_open_questions_are_exported(researcher_client, make_study):
    study = make_study(n_items=4, per_participant=2, raters=1, slug="drafts")
    attempt = started_attempt(study, "P1")
    first = question_open(attempt=attempt)
    context = first.lease.item.context
    # A draft, then the answer with other highlights: the row keeps both.
    highlight_draft_save(token=attempt.token, position=first.lease.position,
                         highlights=[{"start": 0, "end": 12, "text": context[:12]}])
    response_submit(token=attempt.token, position=first.lease.position, chosen_option=0,
                    highlights=[{"start": 0, "end": 20, "text": context[:20]}])
    # The second question: a draft, never answered.
    second = question_open(attempt=attempt)
    text = second.lease.item.context
    highlight_draft_save(token=attempt.token, position=second.lease.position,
                         highlights=[{"start": 2, "end": 9, "text": text[2:9]}])

    rows = {int(r["position"]): r for r in _csv_rows(researcher_client, study) if r["attempt_id"] == str(attempt.pk)}
    assert rows[1]["record"] == "response" and rows[2]["record"] == "lease"
    assert json.loads(rows[1]["draft_highlights"]) == [{"start": 0, "end": 12, "text": context[:12]}]
    assert json.loads(rows[1]["highlights"]) == [{"start": 0, "end": 20, "text": context[:20]}]
    assert json.loads(rows[2]["draft_highlights"]) == [{"start": 2, "end": 9, "text": text[2:9]}]
    assert rows[1]["draft_saved_at"] and rows[2]["draft_saved_at"]

    data = json.loads(researcher_client.get(reverse("studies:study_export", args=[study.slug, "json"])).content)
    exported = {r["position"]: r for r in data["rows"] if r["attempt_id"] == attempt.pk}
    assert exported[2]["draft_highlights"] == [{"start": 2, "end": 9, "text": text[2:9]}]
    api = researcher_client.get(f"/api/studies/{study.slug}/export/").json()
    assert [r["draft_highlights"] for r in api["rows"] if r["attempt_id"] == attempt.pk] == \
        [exported[1]["draft_highlights"], exported[2]["draft_highlights"]]


def test_a_lease_without_a_draft_exports_an_empty_list(researcher_client, make_study):
    study = make_study(n_items=2, per_participant=1, raters=1, slug="no-drafts")
    started_attempt(study, "P2")
    rows = _csv_rows(researcher_client, study)
    assert rows and all(r["draft_highlights"] == "[]" and r["draft_saved_at"] == "" for r in rows)


def test_each_row_names_the_item_version_and_the_key_at_that_version(make_study):
    """An answer given on version 1, then the key changed: the row keeps version 1 and version 1's key (the answer
    was right there), not the current key beside a stored is_correct it contradicts."""
    from annotation.models import Item
    from annotation.services.items import item_update
    from studies.selectors.exports import EXPORT_FIELDS, study_export_rows
    from studies.services import question_open, response_submit
    from tests.studies.conftest import started_attempt

    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = started_attempt(study, "P1")
    question = question_open(attempt=attempt)
    item = Item.objects.get(pk=question.lease.item_id)
    response_submit(token=attempt.token, position=question.lease.position, chosen_option=item.answer_index)
    item_update(item_id=item.pk, base_version=item.version,
                changes={"answer_index": (item.answer_index + 1) % len(item.options)})
    assert "item_version" in EXPORT_FIELDS
    rows = list(study_export_rows(study))
    (answered,) = [row for row in rows if row["record"] == "response"]
    assert (answered["item_version"], answered["correct_option"], answered["chosen_option"], answered["is_correct"]) \
        == (1, item.answer_index, item.answer_index, True)
    for row in rows:  # every row: the key at the version it names
        if row["record"] != "refused":
            shown = Item.objects.get(pk=row["item_id"])
            assert row["item_version"] == shown.content_version or row["item_id"] == item.pk


def test_rows_say_whether_their_item_is_current_stale_with_the_fields_changed_or_deleted(
        researcher_client, make_study, annotator):
    """An answered item reworded (a new content version) and another rejected: every export (CSV, JSON, API) marks
    their rows stale (naming the field) and deleted, beside the item's content version now; the others current."""
    from annotation.models import Item, ItemStatus
    from annotation.services.items import item_update
    from studies.models import Attempt

    study = make_study(n_items=3, per_participant=3, raters=1, slug="states")
    attempt = started_attempt(study, "P1")
    while (question := question_open(attempt=Attempt.objects.select_related("study").get(pk=attempt.pk))):
        response_submit(token=attempt.token, position=question.lease.position, chosen_option=0)
    reworded, rejected, kept = (Item.objects.get(pk=pk) for pk in study.pool.order_by("position")
                                .values_list("item_id", flat=True))
    item_update(item_id=reworded.pk, base_version=reworded.version, user=annotator,
                changes={"question": reworded.question + " Who?"})
    item_update(item_id=rejected.pk, base_version=rejected.version, changes={}, status=ItemStatus.REJECTED)

    expected = {reworded.pk: (1, 2, True, "stale", ["question"]), rejected.pk: (1, 1, False, "deleted", []),
                kept.pk: (1, 1, False, "current", [])}
    fields = ("item_version", "current_version", "stale", "item_state", "changed_fields")
    data = json.loads(researcher_client.get(reverse("studies:study_export", args=[study.slug, "json"])).content)
    assert {r["item_id"]: tuple(r[f] for f in fields) for r in data["rows"]} == expected
    api = researcher_client.get(f"/api/studies/{study.slug}/export/").json()
    assert {r["item_id"]: tuple(r[f] for f in fields) for r in api["rows"]} == expected
    as_cells = {pk: tuple(json.dumps(v) if isinstance(v, list) else str(v) for v in values)
                for pk, values in expected.items()}
    assert {int(r["item_id"]): tuple(r[f] for f in fields) for r in _csv_rows(researcher_client, study)} == as_cells
