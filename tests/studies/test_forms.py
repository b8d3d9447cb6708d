"""The researcher's study form: minutes, a split and a practice-item picker, messages in words, warnings about
the sample and the quota, rejected items left out of pools, and 1-based option numbers in the results.

The study form's screening setup: the question, its options one per line, the passing options by number and the
screen-out code; each mistake is named at its field; the setup checks warn of a question nobody can pass.

The study link works without its trailing slash, and the new-study form starts with its required grace
period and bonus filled in (both had started empty although required)."""
import re

import pytest
from django.urls import reverse

from annotation.models import Item, ItemStatus
from studies.allocation import quota_fit
from studies.models import Study, StudyStatus
from studies.services import question_open, response_submit
from studies.setup_checks import setup_warnings
from tests.studies.conftest import started_attempt


def _data(**fields) -> dict:
    data = {"slug": "form", "title": "Form", "status": StudyStatus.DRAFT, "pool_split": "test", "pool_sample": "",
            "seed": 0, "per_participant": 3, "raters": 1, "time_limit_minutes": "45", "grace_seconds": 5,
            "language": "", "bonus_per_correct": "0", "bonus_currency": "GBP"}
    data.update(fields)
    return data


def _errors(page, field):
    return page.context["form"].errors.get(field, [])


def test_time_limits_are_entered_in_minutes_and_edited_back_exactly(researcher_client, items):
    items(10)
    created = researcher_client.post(reverse("studies:study_create"),
                                     _data(time_limit_minutes="45", question_time_limit_minutes="1.5"))
    assert created.status_code == 302
    study = Study.objects.get(slug="form")
    assert (study.time_limit_seconds, study.question_time_limit_seconds) == (2700, 90)
    page = researcher_client.get(reverse("studies:study_edit", args=["form"])).content.decode()
    assert 'name="time_limit_minutes" value="45"' in page and 'name="question_time_limit_minutes" value="1.5"' in page
    Study.objects.filter(pk=study.pk).update(time_limit_seconds=600)
    assert 'name="time_limit_minutes" value="10"' in researcher_client.get(
        reverse("studies:study_edit", args=["form"])).content.decode()  # not 1E+1
    Study.objects.filter(pk=study.pk).update(time_limit_seconds=302)  # set elsewhere (API, admin)
    page = researcher_client.get(reverse("studies:study_edit", args=["form"])).content.decode()
    assert re.search(r'name="time_limit_minutes" value="5.03"', page)
    assert "Time limit (minutes)" in page and "time_limit_seconds" not in page
    researcher_client.post(reverse("studies:study_edit", args=["form"]),
                           _data(time_limit_minutes="5.03", question_time_limit_minutes=""))
    study.refresh_from_db()
    assert (study.time_limit_seconds, study.question_time_limit_seconds) == (302, None)


@pytest.mark.parametrize("field, value, message", [
    ("raters", "0", "Each item needs at least one rater."),
    ("per_participant", "0", "Each participant needs at least one question."),
    ("time_limit_minutes", "0", "Give the participants at least 1 minute."),
    ("bonus_per_correct", "-1", "The bonus cannot be negative."),
    ("question_time_limit_minutes", "0.1", "A question needs at least half a minute."),
])
def test_validation_messages_are_in_words(researcher_client, items, field, value, message):
    items(5)
    page = researcher_client.post(reverse("studies:study_create"), _data(**{field: value}))
    assert page.status_code == 200 and _errors(page, field) == [message]
    assert "Constraint" not in page.content.decode() and not Study.objects.exists()


def test_the_api_and_the_model_say_it_in_words_too(researcher_client, items):
    items(5)
    body = {"slug": "api-0", "title": "API", "pool_split": "test", "per_participant": 2, "raters": 0,
            "time_limit_seconds": 600}
    response = researcher_client.post("/api/studies/", body, content_type="application/json")
    assert response.status_code == 400 and "Each item needs at least one rater." in response.json()["detail"]
    assert "Constraint" not in response.content.decode()


def test_the_practice_item_is_picked_from_the_items_grouped_by_split(researcher_client, items):
    ids = items(8)
    Item.objects.filter(pk=ids[0]).update(status=ItemStatus.REJECTED)
    page = researcher_client.get(reverse("studies:study_create")).content.decode()
    picker = re.search(r'<select name="practice_item".*?</select>', page, re.S).group(0)
    assert '<optgroup label="test">' in picker
    offered = [int(v) for v in re.findall(r'<option value="(\d+)"', picker)]
    assert offered == ids[1:]  # a rejected item is not offered
    item = Item.objects.get(pk=ids[1])
    assert f"{item.source} #{item.external_id} — {item.question[:30]}" in picker
    researcher_client.post(reverse("studies:study_create"),
                           _data(practice_item=ids[7], pool_items=" ".join(str(i) for i in ids[1:7])))
    assert Study.objects.get(slug="form").practice_item_id == ids[7]
    split = re.search(r'<select name="pool_split".*?</select>', page, re.S).group(0)
    assert '<option value="test" selected>test (8 items, 1 rejected)</option>' in split


def test_quota_fit_counts_finished_attempts_and_stranded_answers():
    fit = quota_fit(24, 3, 15)
    assert (fit.complete_attempts, fit.stranded_answers, fit.divides) == (4, 12, False)
    assert fit.item_counts == (20, 25) and fit.per_participant_counts == (12, 18)
    assert all(n * 3 % 15 == 0 for n in fit.item_counts) and all(72 % p == 0 for p in fit.per_participant_counts)
    assert quota_fit(250, 3, 15).divides and quota_fit(250, 3, 15).complete_attempts == 50
    assert quota_fit(4, 3, 15).complete_attempts == 0


def test_warnings_for_a_sample_larger_than_the_split_and_a_quota_that_does_not_divide(researcher_client, items):
    items(24)
    created = researcher_client.post(reverse("studies:study_create"),
                                     _data(pool_sample="250", per_participant="15", raters="3"))
    assert created.status_code == 302
    assert Study.objects.get(slug="form").pool.count() == 24
    monitor = researcher_client.get(created.url).content.decode()
    box = re.search(r'<section class="card warn-box" id="setup-warnings".*?</section>', monitor, re.S).group(0)
    assert "The sample asks for 250 items but the split “test” has only 24 usable items, so the pool has 24." in box
    assert ("24 items × 3 raters = 72 answers do not divide into 15 per participant: 4 participants can finish, "
            "and 12 answers will never be collected.") in box
    assert "a pool of 20 or 25 items" in box and "12 or 18 questions per participant" in box
    edit = researcher_client.get(reverse("studies:study_edit", args=["form"])).content.decode()
    assert "72 answers do not divide" in edit
    researcher_client.post(reverse("studies:study_edit", args=["form"]),
                           _data(pool_sample="20", per_participant="15", raters="3"))
    assert 'id="setup-warnings"' not in researcher_client.get(created.url).content.decode()


def test_rejected_items_are_left_out_of_pools_unless_included(researcher_client, items):
    ids = items(10)
    Item.objects.filter(pk__in=ids[:2]).update(status=ItemStatus.REJECTED)
    researcher_client.post(reverse("studies:study_create"), _data())
    study = Study.objects.get(slug="form")
    assert sorted(study.pool.values_list("item_id", flat=True)) == ids[2:]
    researcher_client.post(reverse("studies:study_edit", args=["form"]), _data(pool_include_rejected="on"))
    assert study.pool.count() == 10
    rejected = Item.objects.get(pk=ids[0])
    refused = researcher_client.post(reverse("studies:study_edit", args=["form"]),
                                     _data(pool_items=f"{rejected.external_id} {ids[3]}"))
    assert _errors(refused, "pool_items") == [
        f"Annotators rejected these items: {rejected}; remove them or allow rejected items in the pool."]


def test_results_number_options_from_one(researcher_client, make_study):
    study = make_study(n_items=2, per_participant=2, raters=1, slug="onebased")
    attempt = started_attempt(study)
    answers = {}
    for option in (0, 2):
        q = question_open(attempt=attempt)
        response_submit(token=attempt.token, position=q.lease.position, chosen_option=option, highlights=[])
        answers[q.lease.item_id] = option
    page = researcher_client.get(reverse("studies:study_results", args=["onebased"])).content.decode()
    rows = re.findall(r'<td>[^<]*#[^<]*</td>\s*<td class="item-state">.*?</td><td>1/1</td><td>(\d)</td><td>(\d)</td>', page,
                      re.S)
    items = {i.pk: i for i in Item.objects.filter(pk__in=answers)}
    expected = sorted((str(option + 1), str(items[pk].answer_index + 1)) for pk, option in answers.items())
    assert sorted(rows) == expected
    assert "Options are numbered from 1" in page


# --------------------------------------------------------------------------- screening form

def test_a_screening_question_is_set_up_on_the_study_form_and_edited_back(researcher_client, items):
    items(10)
    created = researcher_client.post(reverse("studies:study_create"), _data(
        screening_question="Are you 18 or older?", screening_options="Yes\nNo\n\nPrefer not to say",
        screening_pass="1", screen_out_code="SO-77"))
    assert created.status_code == 302, created.context["form"].errors if created.context else created
    study = Study.objects.get(slug="form")
    assert study.screening_options == ["Yes", "No", "Prefer not to say"] and study.screening_pass == [0]
    assert study.screening and study.screen_out_code == "SO-77"
    page = researcher_client.get(reverse("studies:study_edit", args=["form"])).content.decode()
    assert 'name="screening_pass" value="1"' in page and "Prefer not to say</textarea>" in page
    assert not [w for w in setup_warnings(study) if "screen" in w.lower()]


@pytest.mark.parametrize("fields, field, message", [
    ({"screening_question": "Q?", "screening_options": "Only one", "screening_pass": "1"}, "screening_options",
     "A screening question needs at least two options."),
    ({"screening_options": "Yes\nNo", "screening_pass": "1"}, "screening_question",
     "Screening options need the question they answer."),
    ({"screening_question": "Q?", "screening_options": "Yes\nNo", "screening_pass": "3"}, "screening_pass",
     "There is no option 3: the screening question has 2."),
    ({"screening_question": "Q?", "screening_options": "Yes\nNo", "screening_pass": "first"}, "screening_pass",
     "Passing options: option numbers (1 = the first), e.g. “1, 3”."),
])
def test_screening_mistakes_are_named_at_their_field(researcher_client, items, fields, field, message):
    items(5)
    page = researcher_client.post(reverse("studies:study_create"), _data(**fields))
    assert page.status_code == 200 and _errors(page, field) == [message]
    assert not Study.objects.exists()


def test_the_setup_checks_warn_of_a_question_nobody_passes_and_of_no_screen_out_code(make_study):
    study = make_study(screening_question="Q?", screening_options=["Yes", "No"], screening_pass=[])
    warnings = setup_warnings(study)
    assert "The screening question has no passing option: every participant will be screened out." in warnings
    assert any("no screen-out code" in w for w in warnings)


def test_the_preview_shows_the_screening_question_and_the_screen_out_page(client, researcher, make_study):
    from studies.models import Attempt

    study = make_study(screening_question="Are you 18 or older?", screening_options=["Yes", "No"],
                       screening_pass=[0], screen_out_code="SO-PREVIEW")
    client.force_login(researcher)
    preview = reverse("studies:study_preview", args=[study.slug])
    step = lambda name, **data: client.post(reverse("studies:study_preview_step", args=[study.slug, name]), data)  # noqa: E731
    client.get(preview)
    step("consent", consent="yes")
    page = client.get(preview).content.decode()
    assert 'id="screening"' in page and "Are you 18 or older?" in page and 'id="preview-screened-out"' in page
    step("start", screening_answer="1")
    page = client.get(preview).content.decode()
    assert 'id="screened-out"' in page and 'id="completion-code">SO-PREVIEW<' in page
    step("restart")
    step("consent", consent="yes")
    step("start", screening_answer="0")
    assert "Question 1 of" in client.get(preview).content.decode()
    assert not Attempt.objects.exists()


def test_the_api_sets_up_the_screening_and_names_a_mistake(researcher_client, items):
    items(6)
    body = {"slug": "api-screen", "title": "API", "pool_split": "test", "per_participant": 2, "raters": 1,
            "time_limit_seconds": 600, "screening_question": "Q?", "screening_options": ["Yes", "No"],
            "screening_pass": [0], "screen_out_code": "SO-API"}
    created = researcher_client.post("/api/studies/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    study = Study.objects.get(slug="api-screen")
    assert study.screening and study.screening_pass == [0] and study.screen_out_code == "SO-API"
    wrong = researcher_client.post("/api/studies/", {**body, "slug": "api-screen-2", "screening_pass": [5]},
                                   content_type="application/json")
    assert wrong.status_code == 400 and "A passing option must be one of the screening options." in wrong.content.decode()


# --------------------------------------------------------------------------- study links and form

def test_a_study_link_without_its_trailing_slash_leads_to_the_study_with_its_query(client, make_study):
    make_study(slug="pilot", status=StudyStatus.OPEN)
    response = client.get("/s/pilot?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1")
    assert response.status_code == 302
    assert response["Location"] == "/s/pilot/?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1"
    assert client.get(response["Location"]).status_code == 200
    # Addresses that name nothing, with or without a slash, still get the participants' 404 page.
    for path in ("/s/pilot/nothing-here", "/s/pilot/a/unknown-token/extra", "/s/pilot/a/no-such-token/"):
        missing = client.get(path)
        assert missing.status_code == 404, path
        assert "Django tried these URL patterns" not in missing.content.decode()
    assert client.post("/s/pilot", {}).status_code == 404  # only GET/HEAD are redirected


def test_the_new_study_form_starts_with_the_default_grace_period_and_bonus(researcher_client, items):
    items(6)
    page = researcher_client.get(reverse("studies:study_create")).content.decode()
    assert re.search(r'name="grace_seconds" value="5"', page)
    assert re.search(r'name="bonus_per_correct" value="0(\.00)?"', page)
    # What the browser sends back unchanged is accepted.
    created = researcher_client.post(reverse("studies:study_create"), {
        "slug": "defaults", "title": "Defaults", "status": StudyStatus.DRAFT, "pool_split": "test", "pool_sample": "",
        "seed": 0, "per_participant": 3, "raters": 1, "time_limit_minutes": "30", "grace_seconds": "5",
        "language": "", "bonus_per_correct": "0", "bonus_currency": "GBP"})
    assert created.status_code == 302
    assert Study.objects.get(slug="defaults").grace_seconds == 5
