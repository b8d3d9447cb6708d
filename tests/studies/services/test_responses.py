"""Every refusal of the studies services, driven through a page and through the API: never a 500.

Refusals are `studies.errors` (subclasses of `foundation.errors.ServiceError`); pages show them
beside the form field they name (or as a message, or a participant page with the refusal's status),
the API answers JSON with their code and status.
"""
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Item
from foundation.errors import Conflict, Invalid, ServiceError
from studies import errors
from studies.models import Attempt, AttemptStatus, ParticipantLease, RefusedAnswer, Study, StudyStatus
from studies.services import question_open, study_create
from tests.studies.conftest import started_attempt

HX = {"HTTP_HX_REQUEST": "true"}


def _form(**fields) -> dict:
    data = {
        "slug": "refused", "title": "R", "status": StudyStatus.OPEN, "pool_split": "test", "pool_sample": "",
        "seed": 0, "per_participant": 2, "raters": 1, "time_limit_seconds": 600, "time_limit_minutes": "10", "grace_seconds": 5, "language": "",
        "bonus_per_correct": "0", "bonus_currency": "GBP",
    }
    data.update(fields)
    return {k: v for k, v in data.items() if v is not None}


def _api_body(**fields) -> dict:
    body = _form(**fields)
    if body.get("pool_sample") == "":
        del body["pool_sample"]
    return body


def test_every_refusal_is_a_service_error_with_a_code_and_status():
    cases = [
        (errors.StudyNotOpen(), "not_open", 403, None),
        (errors.AttemptNotRunning(), "not_running", 409, None),
        (errors.PoolFrozen(), "pool_frozen", 409, None),
        (errors.RatersBelowLoad(3), "raters_below_load", 409, "raters"),
        (errors.AnswerRefused(RefusedAnswer.Reason.LATE, "late", 409), "late", 409, None),
        (errors.AnswerRefused(errors.AnswerRefused.UNKNOWN, "unknown", 404), "unknown", 404, None),
        (errors.EmptyPool(), "empty_pool", 400, "pool_split"),
        (errors.UnknownItems(["x"]), "unknown_items", 400, "pool_items"),
        (errors.PracticeItemInPool(), "practice_in_pool", 400, "practice_item"),
        (errors.AnswerInvalid({"chosen_option": "Choose one."}), "answer_invalid", 400, None),
    ]
    for error, code, status, field in cases:
        assert isinstance(error, ServiceError) and not isinstance(error, ValueError)
        assert (error.code, error.http_status, error.field) == (code, status, field), error
    invalid = errors.AnswerInvalid({"chosen_option": "Choose one.", "highlights": ["a", "b"]})
    assert isinstance(invalid, Invalid) and invalid.errors == {"chosen_option": ["Choose one."], "highlights": ["a", "b"]}
    assert invalid.messages == {"chosen_option": "Choose one.", "highlights": "a"}
    assert isinstance(errors.PoolFrozen(), errors.StudyError) and not isinstance(errors.PoolFrozen(), Conflict)


# --------------------------------------------------------------------------- setup: page and API

def test_empty_split_page_and_api(researcher_client, items):
    items(3)
    page = researcher_client.post(reverse("studies:study_create"), _form(pool_split="nothing-here"))
    assert page.status_code == 200
    assert page.context["form"].errors["pool_split"] == ["There is no split “nothing-here”: import its items first."]
    api = researcher_client.post("/api/studies/", _api_body(pool_split="nothing-here"), content_type="application/json")
    assert api.status_code == 400 and api.json()["code"] == "empty_pool" and api.json()["field"] == "pool_split"
    # A split whose items were all rejected by annotators draws nothing either (rejected items are left out).
    Item.objects.filter(split="test").update(status="rejected")
    page = researcher_client.post(reverse("studies:study_create"), _form(pool_split="test"))
    assert page.status_code == 200 and page.context["form"].errors["pool_split"] == [
        "This split has no items to draw from (items annotators rejected are left out unless included)."]
    assert not Study.objects.exists()


def test_unknown_items_page_and_api(researcher_client, items):
    items(3)
    page = researcher_client.post(reverse("studies:study_create"), _form(pool_items="nope-1 999999999"))
    assert page.status_code == 200
    assert page.context["form"].errors["pool_items"] == ["Unknown items: nope-1, 999999999"]
    api = researcher_client.post("/api/studies/", _api_body(pool_items=["nope-1", "²"]), content_type="application/json")
    assert api.status_code == 400 and api.json() == {
        "code": "unknown_items", "detail": "Unknown items: nope-1, ²", "field": "pool_items"}
    assert not Study.objects.exists()


def test_practice_item_in_the_pool_page_and_api(researcher_client, items):
    ids = items(4)
    tokens = [str(i) for i in ids[:3]]
    page = researcher_client.post(reverse("studies:study_create"),
                                  _form(pool_items=" ".join(tokens), practice_item=ids[0]))
    assert page.status_code == 200 and "practice item" in " ".join(page.context["form"].errors["practice_item"])
    api = researcher_client.post("/api/studies/", _api_body(pool_items=tokens, practice_item=ids[0]),
                                 content_type="application/json")
    assert api.status_code == 400 and api.json()["code"] == "practice_in_pool"
    assert not Study.objects.exists()
    created = researcher_client.post("/api/studies/", _api_body(pool_items=tokens, practice_item=ids[3]),
                                     content_type="application/json")
    assert created.status_code == 201 and created.json()["n_items"] == 3


def test_pool_frozen_after_start_page_and_api(researcher_client, items):
    ids = items(8)
    study = study_create(slug="frozen", item_ids=ids[:6], pool_split="test", per_participant=2, raters=2,
                         status=StudyStatus.OPEN)
    started_attempt(study, "P1")
    before = list(study.pool.values_list("item_id", flat=True))
    external = list(Item.objects.filter(pk__in=ids[6:]).values_list("external_id", flat=True))
    page = researcher_client.post(reverse("studies:study_edit", args=[study.slug]),
                                  _form(slug=study.slug, raters=2, pool_items=" ".join(external)))
    assert page.status_code == 200
    assert "The item pool cannot change after participants have started." in page.context["form"].non_field_errors()
    resample = researcher_client.post(reverse("studies:study_edit", args=[study.slug]),
                                      _form(slug=study.slug, raters=2, pool_sample=3, seed=9))
    assert resample.status_code == 200 and resample.context["form"].non_field_errors()
    api = researcher_client.patch(f"/api/studies/{study.slug}/", {"seed": 9, "pool_sample": 3},
                                  content_type="application/json")
    assert api.status_code == 409 and api.json()["code"] == "pool_frozen"
    study.refresh_from_db()
    assert list(study.pool.values_list("item_id", flat=True)) == before and study.seed == 0


def test_raters_below_load_page_and_api(researcher_client, make_study):
    study = make_study(n_items=3, per_participant=3, raters=2, slug="load", pool_split="test")
    started_attempt(study, "a")
    started_attempt(study, "b")
    page = researcher_client.post(reverse("studies:study_edit", args=[study.slug]),
                                  _form(slug=study.slug, per_participant=3, raters=1))
    assert page.status_code == 200
    assert page.context["form"].errors["raters"] == ["An item already has 2 raters; raters cannot go below that."]
    api = researcher_client.patch(f"/api/studies/{study.slug}/", {"raters": 1}, content_type="application/json")
    assert api.status_code == 409 and api.json()["code"] == "raters_below_load" and api.json()["field"] == "raters"
    study.refresh_from_db()
    assert study.raters == 2 and set(study.pool.values_list("quota", flat=True)) == {2}
    raised = researcher_client.patch(f"/api/studies/{study.slug}/", {"raters": 3, "title": "More"},
                                     content_type="application/json")
    assert raised.status_code == 200 and raised.json()["raters"] == 3 and raised.json()["title"] == "More"
    assert set(study.pool.values_list("quota", flat=True)) == {3}


def test_extend_a_finished_attempt_page_and_api(researcher_client, make_study):
    study = make_study(slug="ext")
    attempt = started_attempt(study, "P1")
    researcher_client.post(f"/api/studies/{study.slug}/attempts/{attempt.pk}/expire/")
    page = researcher_client.post(reverse("studies:attempt_extend", args=[study.slug, attempt.pk]), {"minutes": 10},
                                  follow=True)
    assert page.status_code == 200 and b"Only a running attempt can be extended." in page.content
    api = researcher_client.post(f"/api/studies/{study.slug}/attempts/{attempt.pk}/extend/", {"minutes": 10},
                                 content_type="application/json")
    assert api.status_code == 409 and api.json()["code"] == "not_running"
    bad = researcher_client.post(f"/api/studies/{study.slug}/attempts/{attempt.pk}/extend/", {"minutes": 0},
                                 content_type="application/json")
    assert bad.status_code == 400
    assert researcher_client.post(f"/api/studies/{study.slug}/attempts/999999/extend/", {"minutes": 1},
                                  content_type="application/json").status_code == 404


# --------------------------------------------------------------------------- participants: pages

def _joined(study, pid="P1") -> tuple[Client, Attempt]:
    client = Client()
    client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": pid})
    return client, Attempt.objects.get(study=study, external_participant_id=pid)


def _answer(client, attempt, position, option=0, **extra):
    return client.post(reverse("studies_public:answer", args=[attempt.token]),
                       {"position": position, "chosen_option": option, "highlights": "[]", **extra}, **HX)


def test_study_not_open_on_join_and_on_start(make_study):
    study = make_study(slug="shut")
    client, attempt = _joined(study)
    Study.objects.filter(pk=study.pk).update(status=StudyStatus.CLOSED)
    start = client.post(reverse("studies_public:start", args=[attempt.token]))
    assert start.status_code == 403 and b'id="study-closed"' in start.content
    assert not attempt.leases.exists()
    join = Client().post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "P2"})
    assert join.status_code == 403
    assert not Attempt.objects.filter(external_participant_id="P2").exists()


@pytest.mark.parametrize("reason, status", [
    (RefusedAnswer.Reason.LATE, 409), (RefusedAnswer.Reason.CLOSED, 410),
    (RefusedAnswer.Reason.ALREADY_ANSWERED, 409), (RefusedAnswer.Reason.QUESTION_TIMEOUT, 409),
])
def test_refused_answers_get_their_status_and_page(make_study, reason, status):
    study = make_study(n_items=6, per_participant=3, raters=1, grace_seconds=1, question_time_limit_seconds=60)
    client, attempt = _joined(study)
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    position = question_open(attempt=attempt).lease.position
    if reason == RefusedAnswer.Reason.LATE:
        Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    elif reason == RefusedAnswer.Reason.CLOSED:
        client.post(reverse("studies_public:return", args=[attempt.token]))
    elif reason == RefusedAnswer.Reason.ALREADY_ANSWERED:
        assert _answer(client, attempt, position).status_code == 200
    else:
        attempt.leases.filter(position=position).update(shown_at=timezone.now() - timedelta(seconds=120))
    response = _answer(client, attempt, position)
    assert response.status_code == status
    assert f'data-refused="{reason}"'.encode() in response.content
    assert RefusedAnswer.objects.filter(attempt=attempt, reason=reason).exists()


def test_unknown_attempt_or_question_is_a_404(make_study):
    study = make_study()
    client, attempt = _joined(study)
    client.post(reverse("studies_public:start", args=[attempt.token]))
    assert _answer(client, attempt, 99).status_code == 404
    assert client.post(reverse("studies_public:answer", args=["no-such-token"]),
                       {"position": 0, "chosen_option": 0}).status_code == 404
    for name in ("attempt", "start", "practice", "return"):
        url = reverse(f"studies_public:{name}", args=["no-such-token"])
        assert (client.get(url) if name == "attempt" else client.post(url)).status_code == 404, name


def test_invalid_answer_is_a_400_naming_the_field(make_study):
    study = make_study()
    client, attempt = _joined(study)
    client.post(reverse("studies_public:start", args=[attempt.token]))
    attempt.refresh_from_db()
    position = question_open(attempt=attempt).lease.position
    response = _answer(client, attempt, position, option=9)
    assert response.status_code == 400
    page = response.content.decode()
    # The question again, with the field's message: the other messages of the form are not shown.
    assert 'id="question"' in page and '<p class="error">Choose one of the options.</p>' in page
    assert "Confidence must be" not in page and "could not be matched" not in page
    assert attempt.status == AttemptStatus.STARTED and not attempt.responses.exists()


# --------------------------------------------------------------------------- what the participant was shown

def _curate(item_id: int, **changes) -> Item:
    """An annotator's edit of the item's content (a new content version)."""
    from annotation.services.items import item_update

    item = Item.objects.get(pk=item_id)
    return item_update(item_id=item.pk, base_version=item.version, changes=changes)


def _swap_key(item_id: int) -> tuple[int, int]:
    """Curation mid-question: the right option and another swap places. Returns (old key, new key)."""
    item = Item.objects.get(pk=item_id)
    old, new = item.answer_index, (item.answer_index + 1) % len(item.options)
    options = list(item.options)
    options[old], options[new] = options[new], options[old]
    _curate(item_id, options=options, answer_index=new)
    return old, new


def test_an_answer_to_a_question_curated_while_it_was_open_is_refused_and_the_question_shown_again(make_study):
    """The participant read version 1 and chose its right option while an annotator swapped the options (version 2):
    never scored on version 2 (a wrong answer there, recorded as given to it). Refused, kept as refused with the
    version seen; the question shown again at version 2, whose answer is scored on it."""
    from studies.services import response_submit

    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = started_attempt(study)
    question = question_open(attempt=attempt)
    lease = question.lease
    assert lease.shown_content_version == 1
    old, new = _swap_key(lease.item_id)
    with pytest.raises(errors.AnswerRefused) as refused:
        response_submit(token=attempt.token, position=lease.position, chosen_option=old)
    assert refused.value.reason == RefusedAnswer.Reason.CONTENT_CHANGED and refused.value.http_status == 409
    assert not attempt.responses.exists()
    record = RefusedAnswer.objects.get(attempt=attempt)
    assert (record.reason, record.payload["item_version"], record.payload["current_version"]) == \
        (RefusedAnswer.Reason.CONTENT_CHANGED, 1, 2)
    again = question_open(attempt=attempt)  # the page shown again: at the new version
    assert again.lease.pk == lease.pk and again.lease.shown_content_version == 2
    response = response_submit(token=attempt.token, position=lease.position, chosen_option=new).response
    assert (response.item_version, response.is_correct) == (2, True)


def test_the_version_a_page_was_rendered_with_wins_over_a_newer_showing_in_another_tab(make_study):
    """Tab A shows version 1; the item is curated and tab B (a reload) shows version 2, recorded on the lease; tab
    A's answer, sent with its own version, is refused all the same: it was given on version 1."""
    from studies.services import response_submit

    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = started_attempt(study)
    lease = question_open(attempt=attempt).lease
    old, new = _swap_key(lease.item_id)
    assert question_open(attempt=attempt).lease.shown_content_version == 2  # tab B
    with pytest.raises(errors.AnswerRefused):
        response_submit(token=attempt.token, position=lease.position, chosen_option=old, shown_version="1")
    response = response_submit(token=attempt.token, position=lease.position, chosen_option=new, shown_version="2")
    assert (response.response.item_version, response.response.is_correct) == (2, True)


def test_an_edit_reverted_while_the_question_was_open_refuses_nothing(make_study):
    """Version 1 shown; the options swapped (version 2) and swapped back by a revert: the content is version 1's
    again, so is the version. The answer given on what the participant read is taken and scored on it; one given
    on a page of the version in between is refused."""
    from annotation.services import item_revert
    from studies.services import response_submit

    study = make_study(n_items=6, per_participant=3, raters=1)
    attempt = started_attempt(study)
    lease = question_open(attempt=attempt).lease
    old, _ = _swap_key(lease.item_id)
    item = Item.objects.get(pk=lease.item_id)
    assert item_revert(item_id=item.pk, revision_number=1, base_version=item.version).content_version == 1
    with pytest.raises(errors.AnswerRefused):
        response_submit(token=attempt.token, position=lease.position, chosen_option=old, shown_version="2")
    response = response_submit(token=attempt.token, position=lease.position, chosen_option=old).response
    assert (response.item_version, response.is_correct) == (1, True)


@pytest.mark.parametrize("sent", [None, ""])
def test_the_language_recorded_is_the_one_the_question_was_shown_in_not_the_attempts_now(make_study, items, sent):
    """The participant switches language in another tab (no page of this question shown in it): the answer given on
    the page shown in English is recorded in English, and its highlights are checked against the English story."""
    from studies.services import attempt_set_language, response_submit

    ids = items(6)
    for pk in ids:
        item = Item.objects.get(pk=pk)
        Item.objects.filter(pk=pk).update(translations={"zh-hans": {
            "context": "管家在花园里。" * 5, "question": "谁？", "options": [f"选项{i}" for i in range(len(item.options))]}})
    study = make_study(n_items=6, per_participant=2, raters=1, language="", extra_languages=["zh-hans"])
    attempt = started_attempt(study)
    lease = question_open(attempt=attempt).lease
    assert lease.shown_language == ""
    attempt_set_language(attempt_id=attempt.pk, language="zh-hans")
    context = Item.objects.get(pk=lease.item_id).context
    word = context.split()[1]
    start = context.index(word)
    highlight = [{"start": start, "end": start + len(word), "text": word}]
    response = response_submit(token=attempt.token, position=lease.position, chosen_option=0, highlights=highlight,
                               shown_language=sent).response
    assert response.language == "" and response.highlights == highlight
    following = ParticipantLease.objects.get(attempt=attempt, position=lease.position + 1)
    assert following.shown_language == "zh-hans"  # the next question is shown in the language chosen since


def test_a_question_shown_again_in_another_language_records_it(make_study, items):
    """A language switch in the same tab shows the open question again in the other language: the lease records it,
    and an answer from that page (which sends its language) is checked against the translated story."""
    from studies.services import attempt_set_language, response_submit

    ids = items(4)
    for pk in ids:
        item = Item.objects.get(pk=pk)
        Item.objects.filter(pk=pk).update(translations={"zh-hans": {
            "context": "管家在花园里。", "question": "谁？", "options": [f"选项{i}" for i in range(len(item.options))]}})
    study = make_study(n_items=4, per_participant=2, raters=1, language="", extra_languages=["zh-hans"])
    attempt = started_attempt(study)
    lease = question_open(attempt=attempt).lease
    attempt_set_language(attempt_id=attempt.pk, language="zh-hans")
    attempt.refresh_from_db()
    assert question_open(attempt=attempt).lease.shown_language == "zh-hans"
    highlight = [{"start": 0, "end": 2, "text": "管家"}]
    response = response_submit(token=attempt.token, position=lease.position, chosen_option=0, highlights=highlight,
                               shown_language="zh-hans").response
    assert response.language == "zh-hans" and response.highlights == highlight
