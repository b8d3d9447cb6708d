"""The admin (annotation.admin) writes through the services: versioned item edits, stage configurations,
giving leases back; the workflow's records are read-only there."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, Item, ItemStatus, Stage, StageConfig

from .workflow_support import make_items

pytestmark = pytest.mark.django_db

NEW_ITEM = {
    "source": "admin", "external_id": "77", "external_id_is_int": "on", "split": "dev",
    "context": "The cook locked the pantry at nine. Later the pantry was found open.",
    "question": "Who opened the pantry?", "options": json.dumps(["The cook", "The butler"]), "answer_index": "1",
    "evidence": "locked the pantry at nine -> only a key holder could open it",
    "reasoning": "only a key holder could open it -> The butler", "translations": "{}", "extra": "{}",
    "status": ItemStatus.IMPORTED,
    # the read-only revisions inline still sends its management form
    "revisions-TOTAL_FORMS": "0", "revisions-INITIAL_FORMS": "0", "revisions-MIN_NUM_FORMS": "0",
    "revisions-MAX_NUM_FORMS": "1000",
}


def test_an_item_added_in_the_admin_gets_its_facts_and_first_revision(admin_client, admin_user):
    assert admin_client.post("/admin/annotation/item/add/", NEW_ITEM).status_code == 302
    item = Item.objects.get(source="admin", external_id="77")
    assert (item.version, item.question_type, item.evidence_count, item.reasoning_steps) == (1, "who", 1, 1)
    (revision,) = item.revisions.all()
    assert (revision.number, revision.author, revision.note) == (1, admin_user, "created in the admin")
    assert revision.snapshot == item.content()


def test_an_item_changed_in_the_admin_is_a_new_revision(admin_client):
    (item,) = make_items(1)
    data = {**NEW_ITEM, "source": item.source, "external_id": item.external_id, "split": item.split,
            "context": item.context, "question": "Who really entered the study?", "options": json.dumps(item.options),
            "answer_index": str(item.answer_index), "evidence": item.evidence, "reasoning": item.reasoning,
            "status": item.status, "base_version": item.version}
    assert admin_client.post(f"/admin/annotation/item/{item.pk}/change/", data).status_code == 302
    item.refresh_from_db()
    assert item.version == 2 and item.question == "Who really entered the study?"
    latest = item.revisions.order_by("-number").first()
    assert (latest.number, latest.changed_fields, latest.note) == (2, ["question"], "edited in the admin")


def _opened(admin_client, item) -> dict:
    """The change form as the page gives it: the item's fields and the version the page was opened at."""
    import re

    page = admin_client.get(f"/admin/annotation/item/{item.pk}/change/").content.decode()
    (version,) = re.findall(r'<input type="hidden" name="base_version" value="(\d+)"', page)
    return {**NEW_ITEM, "source": item.source, "external_id": item.external_id, "split": item.split,
            "context": item.context, "question": item.question, "options": json.dumps(item.options),
            "answer_index": str(item.answer_index), "evidence": item.evidence, "reasoning": item.reasoning,
            "status": item.status, "base_version": version}


@pytest.mark.parametrize("meanwhile", ["content", "status"])
def test_a_save_in_the_admin_over_an_edit_made_since_the_page_was_opened_is_refused(admin_client, annotator,
                                                                                    meanwhile):
    """Opened, then someone else saves (a content fix, or only a status move), then the stale page is saved with
    another field changed: refused with the item's conflict message, nothing written; opened again, it saves."""
    from annotation.services import item_update

    (item,) = make_items(1)
    stale = _opened(admin_client, item)
    fix = {"question": item.question + " (fixed)"} if meanwhile == "content" else {}
    other = next(status for status in (ItemStatus.VERIFICATION, ItemStatus.IMPORTED) if status != item.status)
    item_update(item_id=item.pk, base_version=item.version, changes=fix, user=annotator, note="meanwhile",
                status=None if fix else other)
    item.refresh_from_db()
    before = (item.version, item.content(), item.status)
    answer = admin_client.post(f"/admin/annotation/item/{item.pk}/change/",
                               {**stale, "reasoning": item.reasoning + " More."})
    assert answer.status_code == 200 and "since version 1 that you started from" in answer.content.decode()
    item.refresh_from_db()
    assert (item.version, item.content(), item.status) == before
    fresh = _opened(admin_client, item)
    assert admin_client.post(f"/admin/annotation/item/{item.pk}/change/",
                             {**fresh, "reasoning": item.reasoning + " More."}).status_code == 302
    item.refresh_from_db()
    assert item.version == before[0] + 1 and item.reasoning.endswith(" More.")
    assert item.question == before[1]["question"]  # the edit made meanwhile is kept


def test_every_admin_form_that_edits_a_versioned_model_carries_the_version_it_was_opened_at(admin_user, rf):
    """Found from the admin's registry: each model with a version that the admin can change has a form that asks
    for the version it was opened at."""
    from django.contrib import admin

    request = rf.get("/admin/")
    request.user = admin_user
    versioned = [(model, model_admin) for model, model_admin in admin.site._registry.items()
                 if any(field.name == "version" for field in model._meta.get_fields())
                 and model_admin.has_change_permission(request)]
    assert Item in [model for model, _ in versioned]
    for model, model_admin in versioned:
        assert "base_version" in model_admin.get_form(request, model()).base_fields, model


def test_stage_configuration_is_set_in_the_admin(admin_client):
    # The row comes from a data migration; a transactional test before this one may have flushed it.
    config, _ = StageConfig.objects.get_or_create(stage=Stage.REVIEW)
    response = admin_client.post(f"/admin/annotation/stageconfig/{config.pk}/change/",
                                 {"stage": Stage.REVIEW, "annotators_required": "2", "lease_minutes": "45"})
    assert response.status_code == 302
    config.refresh_from_db()
    assert (config.annotators_required, config.lease_minutes) == (2, 45)


def test_leases_are_released_by_an_action_and_not_edited(admin_client, annotator):
    (item,) = make_items(1)
    now = timezone.now()
    lease = AnnotatorLease.objects.create(item=item, stage=Stage.VERIFICATION, annotator=annotator, leased_at=now,
                                          expires_at=now + timedelta(minutes=30))
    edit = admin_client.post(f"/admin/annotation/annotatorlease/{lease.pk}/change/",
                             {"status": AnnotatorLeaseStatus.SUBMITTED})
    assert edit.status_code == 403
    response = admin_client.post("/admin/annotation/annotatorlease/",
                                 {"action": "release", "_selected_action": [lease.pk]})
    assert response.status_code == 302
    lease.refresh_from_db()
    assert lease.status == AnnotatorLeaseStatus.RELEASED


#: What a researcher may type into a JSON field of the item's change form that no item can hold, as the text sent.
UNSTORABLE_TEXT = {"null": "null", "empty": "", "NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity",
                   "nested NaN": '{"notes": [1, {"x": NaN}]}'}


def test_a_json_field_saved_in_the_admin_with_a_value_no_item_holds_is_a_form_error_beside_the_field(admin_client):
    """Every JSON content field of Item (found on the model) x null, empty, NaN, the infinities, a NaN deep inside:
    the change form comes back with the error beside the field (the edit service's refusal), nothing is written,
    never a 500. The form still carries the version it was opened at."""
    from django.db.models import JSONField

    from annotation.models import CONTENT_FIELDS

    (item,) = make_items(1)
    fields = [f.name for f in Item._meta.concrete_fields if isinstance(f, JSONField) and f.name in CONTENT_FIELDS]
    assert {"options", "translations", "extra"} <= set(fields)
    before = (item.version, item.content())
    opened = _opened(admin_client, item)
    failures = []
    for field in fields:
        for kind, text in UNSTORABLE_TEXT.items():
            if field == "options" and kind == "nested NaN":
                text = json.dumps(item.options)[:-1] + ', {"x": [NaN]}]'
            try:
                answer = admin_client.post(f"/admin/annotation/item/{item.pk}/change/", {**opened, field: text})
            except Exception as error:  # noqa: BLE001 - what a 500 would have been
                failures.append(f"{field}={kind}: {type(error).__name__}")
                continue
            page = answer.content.decode()
            if answer.status_code != 200 or f"errors field-{field}" not in page:
                failures.append(f"{field}={kind}: {answer.status_code}, no error beside the field")
    assert not failures, "\n".join(failures)
    item.refresh_from_db()
    assert (item.version, item.content()) == before
    page = admin_client.post(f"/admin/annotation/item/{item.pk}/change/", {**opened, "extra": "null"}).content.decode()
    assert "must be an object, got null" in page
    assert admin_client.post(f"/admin/annotation/item/{item.pk}/change/",
                             {**opened, "extra": '{"notes": [1.5, null]}'}).status_code == 302
    item.refresh_from_db()
    assert item.extra == {"notes": [1.5, None]} and item.version == before[0] + 1
