"""The end of an attempt and the way in: the completion code with a copy button and the way back to Prolific, a
timer that says "Time is up" (not "Time left: Time is up"), and study links whose ids were never filled in
(``PROLIFIC_PID={{%PROLIFIC_PID%}}``) refused with a page naming the field."""
import html
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from studies.errors import PlaceholderId
from studies.links import completion_link, unfilled_fields, unfilled_placeholder
from studies.models import Attempt, AttemptStatus
from studies.services import attempt_return, question_open, response_submit, study_join
from tests.studies.conftest import started_attempt

PROLIFIC_CC = "https://app.prolific.com/submissions/complete?cc="


# --------------------------------------------------------------------------- placeholders

@pytest.mark.parametrize("value", ["{{%PROLIFIC_PID%}}", "%PROLIFIC_PID%", "{{PROLIFIC_PID}}", "{PROLIFIC_PID}",
                                   "PROLIFIC_PID", "${PROLIFIC_PID}", " {{%SESSION_ID%}} ", "[STUDY_ID]"])
def test_unfilled_placeholders_are_recognised(value):
    assert unfilled_placeholder(value)


@pytest.mark.parametrize("value", ["", "5f3c0a9e1b2d4c6e8f0a1b2c", "pw-1", "P1", "participant_42", "a.b@c",
                                   "100%", "SESSION-7"])
def test_real_ids_are_not_placeholders(value):
    assert not unfilled_placeholder(value)


def test_join_refuses_a_placeholder_id_naming_the_field_and_takes_no_place(client, make_study):
    study = make_study()
    landing = reverse("studies_public:landing", args=[study.slug])
    page = client.get(landing, {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}", "STUDY_ID": "{{%STUDY_ID%}}",
                                "SESSION_ID": "abc"})
    assert page.status_code == 400
    text = html.unescape(page.content.decode())
    assert 'id="placeholder-id"' in text and 'id="consent"' not in text
    assert "The link gives “{{%PROLIFIC_PID%}}” as your participant id (PROLIFIC_PID)" in text
    assert "The link gives “{{%STUDY_ID%}}” as the study id (STUDY_ID)" in text
    assert "session id" not in text  # SESSION_ID was filled in
    # Joining with it (a form posted by hand, a bot) is refused the same way.
    joined = client.post(reverse("studies_public:join", args=[study.slug]),
                         {"consent": "yes", "PROLIFIC_PID": "%PROLIFIC_PID%", "SESSION_ID": "{{%SESSION_ID%}}"})
    assert joined.status_code == 400
    text = html.unescape(joined.content.decode())
    assert "“%PROLIFIC_PID%” as your participant id (PROLIFIC_PID)" in text
    assert "“{{%SESSION_ID%}}” as your session id (SESSION_ID)" in text
    assert not Attempt.objects.exists()
    with pytest.raises(PlaceholderId) as refused:
        study_join(study=study, participant_id="{{%PROLIFIC_PID%}}")
    assert refused.value.fields == ["PROLIFIC_PID"] and refused.value.http_status == 400
    assert unfilled_fields({"PROLIFIC_PID": "x", "STUDY_ID": "%STUDY_ID%"}) == ["STUDY_ID"]


def test_a_browser_with_an_attempt_resumes_it_even_from_a_placeholder_link(client, make_study):
    study = make_study()
    client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "real-1"})
    attempt = Attempt.objects.get()
    landing = client.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"})
    assert landing.status_code == 302 and landing.url == reverse("studies_public:attempt", args=[attempt.token])
    assert Attempt.objects.count() == 1


def test_the_chinese_placeholder_page(client, make_study, items):
    from annotation.models import Item

    Item.objects.filter(pk__in=items(10)).update(translations={"zh-hans": {
        "context": "故事", "question": "问题", "options": ["甲", "乙", "丙", "丁"]}})
    study = make_study(language="zh-hans")
    page = client.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "%PROLIFIC_PID%"})
    text = html.unescape(page.content.decode())
    assert page.status_code == 400 and "“%PROLIFIC_PID%”" in text and "PROLIFIC_PID" in text
    assert "This study link is incomplete" not in text


# --------------------------------------------------------------------------- the way back

@pytest.mark.parametrize("completion_url, code, from_prolific, finished, expected", [
    ("", "ABC123", True, True, PROLIFIC_CC + "ABC123"),
    ("", "ABC 1&2", True, True, PROLIFIC_CC + "ABC+1%262"),
    ("", "ABC123", False, True, ""),                       # not from Prolific, no URL: nowhere to send them
    ("", "", True, True, ""),                               # no code to enter
    ("https://app.prolific.com/submissions/complete?cc=ABC123", "ABC123", False, True, PROLIFIC_CC + "ABC123"),
    ("https://app.prolific.com/submissions/complete?cc=ABC123", "LATE9", True, False, PROLIFIC_CC + "LATE9"),
    ("https://app.prolific.co/submissions/complete?cc=X", "", True, True,
     "https://app.prolific.co/submissions/complete?cc=X"),
    ("https://panel.example.org/done?s=1", "ABC123", True, True, "https://panel.example.org/done?s=1"),
    ("https://panel.example.org/done?s=1", "LATE9", True, False, ""),  # a time-out is not a completion elsewhere
    ("", "LATE9", True, False, PROLIFIC_CC + "LATE9"),
])
def test_completion_links(completion_url, code, from_prolific, finished, expected):
    assert completion_link(completion_url=completion_url, code=code, from_prolific=from_prolific,
                           finished=finished) == expected


def _finish(study, pid):
    attempt = started_attempt(study, pid)
    while (q := question_open(attempt=attempt)) is not None:
        response_submit(token=attempt.token, position=q.lease.position, chosen_option=0, highlights=[])
    return attempt


def _end(client, attempt) -> str:
    return client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()


def test_the_end_page_has_a_copy_button_and_a_return_to_prolific_link(client, make_study):
    study = make_study(completion_code="C0MPLETE", per_participant=2)
    page = _end(client, _finish(study, "prolific-1"))
    assert 'id="completion-code">C0MPLETE<' in page
    button = re.search(r'<button type="button" class="copy-code" data-copy="completion-code"[^>]*>([^<]*)<', page)
    assert button and button.group(1) == "Copy code"
    assert re.search(r'<span class="muted" role="status" data-copy-status>', page)
    link = re.search(r'<a class="button primary" id="return-link" href="([^"]+)">([^<]+)</a>', page)
    assert html.unescape(link.group(1)) == PROLIFIC_CC + "C0MPLETE" and link.group(2) == "Return to Prolific"

    # The study's own completion URL wins (a Prolific one gets the code); another platform's is named so.
    study.completion_url = "https://panel.example.org/finish?id=7"
    study.save()
    page = _end(client, Attempt.objects.get(external_participant_id="prolific-1"))
    assert 'href="https://panel.example.org/finish?id=7">Return to the recruitment platform</a>' in page

    # Without a Prolific id (an open link) and without a URL there is only the code, to be copied.
    study.completion_url = ""
    study.save()
    anonymous = study_join(study=study)
    from studies.services import attempt_start

    attempt_start(attempt_id=anonymous.pk)
    while (q := question_open(attempt=anonymous)) is not None:
        response_submit(token=anonymous.token, position=q.lease.position, chosen_option=0, highlights=[])
    page = Client().get(reverse("studies_public:attempt", args=[anonymous.token])).content.decode()
    assert 'id="completion-code">C0MPLETE<' in page and 'id="return-link"' not in page


def test_after_a_timeout_the_timeout_code_has_its_copy_button_and_link_and_who_stopped_gets_none(client, make_study):
    study = make_study(completion_code="DONE-1", timeout_completion_code="LATE-7")
    late = started_attempt(study, "late-1")
    Attempt.objects.filter(pk=late.pk).update(deadline=timezone.now() - timedelta(seconds=60))
    page = _end(client, late)
    assert 'id="ended"' in page and 'id="completion-code">LATE-7<' in page and 'data-copy="completion-code"' in page
    assert f'href="{PROLIFIC_CC}LATE-7"' in page and "DONE-1" not in page
    stopped = started_attempt(study, "stop-1")
    attempt_return(attempt_id=stopped.pk)
    page = _end(client, stopped)
    assert "completion-code" not in page and "return-link" not in page and "LATE-7" not in page


# --------------------------------------------------------------------------- the timer's words

def test_the_timer_says_time_is_up_without_time_left_in_front(client, make_study):
    study = make_study(time_limit_seconds=600, grace_seconds=30)
    client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "t-1"})
    attempt = Attempt.objects.get()
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    timer = re.search(r'<span class="timer".*?</span>\s*</span>', page, re.S).group(0)
    assert re.search(r"<span data-timer-label>Time left:</span>", timer)
    assert 'data-expired-text="Time is up"' in timer
    assert 'data-expired-note="Your answers so far are kept; this page moves on by itself in a moment."' in timer
    # In the grace seconds after the deadline the page still shows the question, and says that time is up.
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    page = client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()
    timer = re.search(r'<span class="timer".*?</span>\s*</span>', page, re.S).group(0)
    assert "<span data-timer-label hidden>" in timer
    assert re.search(r'data-seconds-left="0"[^>]*>Time is up</strong>', timer)
    assert Attempt.objects.get().status == AttemptStatus.STARTED


def test_a_per_question_limit_says_that_the_question_is_up(client, make_study):
    study = make_study(time_limit_seconds=3600, question_time_limit_seconds=60)
    client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "q-1"})
    attempt = Attempt.objects.get()
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    assert 'data-expired-text="Time is up for this question"' in page


def test_a_researcher_on_a_placeholder_link_is_pointed_to_the_preview(client, researcher, make_study):
    study = make_study()
    client.force_login(researcher)
    page = client.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"})
    text = page.content.decode()
    assert page.status_code == 400 and 'id="researcher-note"' in text
    assert f'href="{reverse("studies:study_preview", args=[study.slug])}"' in text
