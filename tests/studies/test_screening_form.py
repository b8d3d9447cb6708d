"""The study form's screening setup: the question, its options one per line, the passing options by number and the
screen-out code; each mistake is named at its field; the setup checks warn of a question nobody can pass."""
import pytest
from django.urls import reverse

from studies.models import Study
from studies.setup_checks import setup_warnings

from .test_study_form import _data, _errors


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
