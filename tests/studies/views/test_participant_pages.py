"""What a participant reads: the consent page, the end page after a timeout, the language switch, and
friendly 403/404/410/500 pages in every mode (DEBUG on too); no page carries an inline script or handler.

Participant pages in Chinese: UI strings from locale/zh_Hans, items from their translation, KeyInfo by character."""
import io
import json
import logging
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape as django_escape
from markupsafe import escape

from annotation.models import Item
from studies.models import DEFAULT_CONSENT_TEXT, Attempt, AttemptStatus, Response, Study, StudyStatus
from studies.selectors.exports import study_export_rows
from studies.selectors.results import study_results
from studies.services import attempt_expire, attempt_return, question_open, response_submit
from tests.studies.conftest import started_attempt

HX = {"HTTP_HX_REQUEST": "true"}
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)
ZH = {"context": "管家说他整晚都在花园里。但是他的鞋子是干的，而昨晚下了雨。", "question": "谁在说谎？",
      "options": ["管家", "厨师", "园丁", "司机"]}


def _landing(client, study, **params):
    return client.get(reverse("studies_public:landing", args=[study.slug]), params)


def _join(client, study, pid, **extra):
    return client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": pid,
                                                                           **extra})


def _hub(client, attempt, **extra):
    return client.get(reverse("studies_public:attempt", args=[attempt.token]), **extra)


def assert_no_inline_script(html: str) -> None:
    assert not INLINE_SCRIPT.search(html), INLINE_SCRIPT.search(html).group(0)
    assert not INLINE_HANDLER.search(html), INLINE_HANDLER.search(html).group(0)


# --------------------------------------------------------------------------- consent

def test_consent_page_shows_the_text_the_number_of_questions_and_the_time_limit(client, make_study):
    study = make_study(per_participant=3, time_limit_seconds=5400, question_time_limit_seconds=120,
                       bonus_per_correct="0.20", consent_text="We study detectives.\n\nYou may stop at any time.")
    page = _landing(client, study).content.decode()
    assert "<p>We study detectives.</p>" in page
    facts = re.search(r'<ul id="study-facts">(.*?)</ul>', page, re.S).group(1)
    assert "You will answer 3 questions." in facts
    assert "The time limit is 1 hour 30 minutes in total." in facts
    assert "Each question also has its own limit of 2 minutes." in facts
    assert "0.20 GBP for every correct answer" in facts


def test_a_study_without_consent_text_shows_the_standard_one(client, make_study):
    study = make_study(consent_text="")
    page = _landing(client, study).content.decode()
    assert "This is a research study on how people solve detective puzzles." in page
    assert "What we record" in page


def test_create_study_writes_the_standard_consent_in_the_study_language(items):
    items(12)
    call_command("create_study", "--slug", "demo", "--split", "test", "--per-participant", "3", "--raters", "1",
                 "--time-limit", "1800", stdout=io.StringIO())
    assert Study.objects.get(slug="demo").consent_text == str(DEFAULT_CONSENT_TEXT)
    call_command("create_study", "--slug", "mine", "--split", "test", "--per-participant", "3", "--raters", "1",
                 "--consent-text", "Only mine.", "--status", "draft", stdout=io.StringIO())
    assert Study.objects.get(slug="mine").consent_text == "Only mine."
    Item.objects.update(translations={"zh-hans": ZH})
    call_command("create_study", "--slug", "zh", "--split", "test", "--per-participant", "3", "--raters", "1",
                 "--language", "zh-hans", "--status", "draft", stdout=io.StringIO())
    zh = Study.objects.get(slug="zh").consent_text
    assert zh != str(DEFAULT_CONSENT_TEXT) and "侦探" in zh


# --------------------------------------------------------------------------- the end page after a timeout

def _expired_with_one_answer(study):
    attempt = started_attempt(study)
    q = question_open(attempt=attempt)
    response_submit(token=attempt.token, position=q.lease.position, chosen_option=0, highlights=[])
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=60))
    return attempt


def test_after_a_timeout_the_page_shows_the_timeout_code_and_that_the_answers_were_kept(client, make_study):
    study = make_study(completion_code="DONE-1", timeout_completion_code="TIMEOUT-7",
                       timeout_instruction="Enter TIMEOUT-7 on Prolific.")
    attempt = _expired_with_one_answer(study)
    page = _hub(client, attempt).content.decode()
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.EXPIRED
    ended = re.search(r'<section class="card" id="ended".*?</section>', page, re.S).group(0)
    assert "Time is up" in ended and "The time limit of 10 minutes has passed." in ended
    assert "Your answer has been saved and is kept for the study." in ended
    assert re.search(r'id="completion-code">TIMEOUT-7<', ended) and "Enter TIMEOUT-7 on Prolific." in ended
    assert "DONE-1" not in page and "return-instruction" not in page


def test_after_a_timeout_without_a_timeout_code_the_page_asks_to_return_the_study(client, make_study):
    study = make_study(completion_code="DONE-1")
    attempt = _expired_with_one_answer(study)
    page = _hub(client, attempt).content.decode()
    instruction = re.search(r'id="return-instruction">(.*?)</div>', page, re.S).group(1)
    assert "return the study on your recruitment platform" in instruction and "Return submission" in instruction
    assert "completion-code" not in page and "DONE-1" not in page


def test_who_stops_or_is_closed_by_the_researcher_is_asked_to_return_never_given_the_timeout_code(
        client, make_study):
    study = make_study(timeout_completion_code="TIMEOUT-7")
    stopped, closed = started_attempt(study), started_attempt(study)
    attempt_return(attempt_id=stopped.pk)
    attempt_expire(attempt_id=closed.pk)
    stopped_page = _hub(client, stopped).content.decode()
    assert "You have left the study" in stopped_page and "TIMEOUT-7" not in stopped_page
    assert 'id="return-instruction"' in stopped_page
    closed_page = _hub(client, closed).content.decode()
    assert "The researcher closed this attempt before its time was up." in closed_page
    assert "You gave no answer before the end" in closed_page and "Your 0 answers" not in closed_page


# --------------------------------------------------------------------------- the language switch

@pytest.fixture
def bilingual(make_study, items):
    """A study in Chinese that also offers the original English; every item and the practice item translated."""
    ids = items(12)
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": ZH})
    return make_study(language="zh-hans", extra_languages=[""], practice_item=Item.objects.get(pk=ids[-1]),
                      per_participant=2, raters=2)


def test_the_language_switch_changes_the_pages_and_the_items_and_answers_record_it(client, bilingual):
    landing = _landing(client, bilingual, PROLIFIC_PID="L1").content.decode()
    switch = re.search(r'<div class="language-switch".*?</div>', landing, re.S).group(0)
    assert '<strong aria-current="true" lang="zh-hans">简体中文</strong>' in switch
    english_url = re.search(r'<a href="([^"]+)" lang="en"', switch).group(1).replace("&amp;", "&")
    assert "PROLIFIC_PID=L1" in english_url and "lang=en" in english_url
    english = client.get(english_url).content.decode()
    assert "Information and consent" in english and 'name="language" value="en"' in english
    assert "研究说明与知情同意" in landing and 'name="language" value="zh-hans"' in landing

    _join(client, bilingual, "L1", language="en")
    attempt = Attempt.objects.get()
    assert attempt.language == ""
    instructions = _hub(client, attempt).content.decode()
    assert "Instructions" in instructions and ZH["question"] not in instructions  # practice item in English
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    assert ZH["context"] not in page and "Question 1 of 2" in page
    switched = client.post(reverse("studies_public:language", args=[attempt.token]), {"language": "zh-hans"},
                           follow=True).content.decode()
    assert ZH["context"] in switched and "第 1 题，共 2 题" in switched
    assert re.search(r'<button type="submit" name="language" value="zh-hans" lang="zh-hans" aria-current="true"',
                     switched)
    position = int(re.search(r'data-position="(\d+)"', switched).group(1))
    client.post(reverse("studies_public:answer", args=[attempt.token]),
                {"position": position, "chosen_option": 0, "highlights": "[]"}, **HX)
    assert Response.objects.get().language == "zh-hans"
    # A language the study does not offer changes nothing.
    client.post(reverse("studies_public:language", args=[attempt.token]), {"language": "fr"})
    assert Attempt.objects.get().language == "zh-hans"
    # Back to English: the question still open is exported in the language the participant sees it in now.
    client.post(reverse("studies_public:language", args=[attempt.token]), {"language": "en"})
    open_lease = next(r for r in study_export_rows(bilingual) if r["record"] == "lease")
    assert open_lease["language"] == ""


def test_no_switch_when_the_study_offers_one_language(client, make_study):
    page = _landing(client, make_study()).content.decode()
    assert "language-switch" not in page


# --------------------------------------------------------------------------- friendly error pages

@pytest.mark.parametrize("debug", [True, False])
def test_mistyped_links_get_the_participants_404_page_in_every_mode(client, make_study, settings, debug):
    settings.DEBUG = debug
    study = make_study()
    for url, says in [
        ("/s/no-such-study/", "This link does not lead to a study"),
        ("/s/a/not-a-token/", "We cannot find your attempt"),
        (f"/s/{study.slug}/typo/here/", "Page not found"),
        ("/s/Bad Link!/", "Page not found"),
        ("/s/", "Page not found"),
    ]:
        response = client.get(url)
        body = response.content.decode()
        assert response.status_code == 404, url
        assert says in body and 'id="participant-error"' in body, url
        assert "URLconf" not in body and "Traceback" not in body and "studies_public" not in body, url
        assert_no_inline_script(body)


def test_unknown_attempt_in_a_form_post_is_a_404_page_and_a_get_on_a_form_address_goes_back(client, make_study):
    study = make_study()
    for name in ("answer", "start", "practice", "return", "language"):
        response = client.post(reverse(f"studies_public:{name}", args=["not-a-token"]), {"position": 0})
        assert response.status_code == 404 and b"We cannot find your attempt" in response.content, name
    attempt = started_attempt(study)
    for name in ("answer", "start", "practice", "return", "language"):
        response = client.get(reverse(f"studies_public:{name}", args=[attempt.token]))
        assert response.status_code == 302 and response.url == reverse("studies_public:attempt", args=[attempt.token])
    assert client.get(reverse("studies_public:join", args=[study.slug])).url == reverse(
        "studies_public:landing", args=[study.slug])


def test_an_answer_to_an_ended_attempt_is_a_410_page_that_says_the_answers_are_kept(client, make_study):
    study = make_study()
    attempt = _expired_with_one_answer(study)
    attempt_expire(attempt_id=attempt.pk, overdue_only=True)
    response = client.post(reverse("studies_public:answer", args=[attempt.token]),
                           {"position": 1, "chosen_option": 0, "highlights": "[]"})
    body = response.content.decode()
    assert response.status_code == 410 and "Answers you have already given are kept." in body
    assert reverse("studies_public:attempt", args=[attempt.token]) in body


@pytest.mark.parametrize("debug", [True, False])
def test_an_unexpected_error_is_the_participants_500_page_and_is_logged(client, make_study, items, settings, debug,
                                                                         caplog):
    settings.DEBUG = debug
    practice = Item.objects.get(pk=items(12)[-1])
    study = make_study(practice_item=practice)
    _join(client, study, "E1")
    attempt = Attempt.objects.get()
    Item.objects.filter(pk=practice.pk).update(options=5)  # a broken record: showing it fails
    with caplog.at_level(logging.ERROR, logger="studies.participants"):
        response = _hub(client, attempt)
    body = response.content.decode()
    assert response.status_code == 500 and "Something went wrong on our side" in body
    assert "Traceback" not in body and "TypeError" not in body
    assert reverse("studies_public:attempt", args=[attempt.token]) in body  # a way back
    assert any(record.exc_info for record in caplog.records)


def test_a_closed_study_is_a_403_page_with_the_reason(client, make_study):
    study = make_study(status=StudyStatus.CLOSED)
    response = _landing(client, study)
    assert response.status_code == 403 and b"This study is not open" in response.content


def test_error_pages_follow_the_study_language(client, make_study, items):
    ids = items(10)
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": ZH})
    study = make_study(language="zh-hans")
    _join(client, study, "Z1")
    attempt = Attempt.objects.get()
    client.post(reverse("studies_public:start", args=[attempt.token]))
    response = client.post(reverse("studies_public:answer", args=[attempt.token]), {"position": 99})
    assert response.status_code == 404 and response.headers["Content-Language"] == "zh-hans"
    assert "这道题不属于您的作答" in response.content.decode()


# --------------------------------------------------------------------------- no inline script anywhere

def test_no_participant_page_has_an_inline_script_or_event_handler(client, bilingual):
    bodies = [_landing(client, bilingual, PROLIFIC_PID="N1").content.decode()]
    bodies.append(client.post(reverse("studies_public:join", args=[bilingual.slug]), {"PROLIFIC_PID": "N1"})
                  .content.decode())  # consent missing: the page again
    _join(client, bilingual, "N1")
    attempt = Attempt.objects.get()
    bodies.append(_hub(client, attempt).content.decode())
    bodies.append(client.post(reverse("studies_public:practice", args=[attempt.token]), {"chosen_option": 0},
                              **HX).content.decode())
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    bodies.append(page)
    bodies.append(_hub(client, attempt, **HX).content.decode())
    attempt_return(attempt_id=attempt.pk)
    bodies.append(_hub(client, attempt).content.decode())
    bodies.append(client.post(reverse("studies_public:answer", args=[attempt.token]), {"position": 0}).content.decode())
    bodies.append(Client().get("/s/nothing/here/").content.decode())
    for body in bodies:
        assert_no_inline_script(body)
    assert all(re.search(r'<script src="[^"]+" defer>', body) for body in bodies if "<html" in body)


# --------------------------------------------------------------------------- in Chinese

ZH_WITH_EVIDENCE = {"context": "管家说他整晚都在花园里。但是他的鞋子是干的，而昨晚下了雨。", "question": "谁在说谎？",
      "options": ["管家", "厨师", "园丁", "司机"], "evidence": "他的鞋子是干的 -> 他没有在花园里\n昨晚下了雨 -> 花园是湿的"}


def test_chinese_study_shows_translated_item_and_ui_and_scores_keyinfo_by_character(client, make_study, items):
    ids = items(3)
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": ZH_WITH_EVIDENCE})
    study = make_study(n_items=3, per_participant=1, raters=1, language="zh-hans")
    landing = client.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "zh1"})
    assert "我已阅读以上说明并同意参加。" in landing.content.decode()
    join = client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "zh1"})
    attempt = Attempt.objects.get()
    assert "开始" in client.get(join.url).content.decode()
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    assert "第 1 题，共 1 题" in page and "剩余时间" in page and ZH_WITH_EVIDENCE["context"] in page and "管家" in page
    start = ZH_WITH_EVIDENCE["context"].index("他的鞋子是干的")
    highlight = [{"start": start, "end": start + 7, "text": "他的鞋子是干的"}]
    position = re.search(r'data-position="(\d+)"', page).group(1)
    done = client.post(reverse("studies_public:answer", args=[attempt.token]), {
        "position": position, "chosen_option": 0, "highlights": json.dumps(highlight, ensure_ascii=False)})
    assert done.status_code == 302
    assert "谢谢参与" in client.get(done.url).content.decode()
    assert Response.objects.get().language == "zh-hans"
    results = study_results(study)
    assert results.keyinfo is not None and results.keyinfo > 0.5  # rouge-score alone would give 0 for Chinese


def test_browser_language_switches_the_ui_when_the_study_has_none(client, make_study):
    study = make_study()
    page = client.get(reverse("studies_public:landing", args=[study.slug]), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "研究说明与知情同意" in page.content.decode()
    english = client.get(reverse("studies_public:landing", args=[study.slug]), HTTP_ACCEPT_LANGUAGE="en")
    assert "Information and consent" in english.content.decode()


def test_chinese_practice_feedback_and_field_errors(client, make_study, items):
    Item.objects.filter(pk__in=items(12)).update(translations={"zh-hans": ZH_WITH_EVIDENCE})  # an open Chinese study needs them
    practice = Item.objects.get(pk=items(12)[-1])
    study = make_study(language="zh-hans", practice_item=practice)
    client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "zh2"})
    attempt = Attempt.objects.get()
    url = reverse("studies_public:practice", args=[attempt.token])
    assert "答对了" in client.post(url, {"chosen_option": practice.answer_index}).content.decode()
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    position = re.search(r'data-position="(\d+)"', page).group(1)
    bad = client.post(reverse("studies_public:answer", args=[attempt.token]),
                      {"position": position, "chosen_option": 0, "confidence": "9"})
    assert bad.status_code == 400 and "把握程度必须在 1 到 5 之间" in bad.content.decode()


@pytest.mark.parametrize("script_prefix", ["/", "/lab/"])
def test_the_attempt_addresses_equal_reverse_for_every_route_and_any_url_safe_token(script_prefix, make_study):
    import secrets
    import string

    from django.urls import clear_script_prefix, set_script_prefix

    from studies import urls_public
    from studies.views.participant_pages import ATTEMPT_ROUTES, attempt_url, participant_urls

    # Every public route of an attempt (by its token) is among the addresses a page gets.
    assert {p.name for p in urls_public.urlpatterns if "<str:token>" in str(p.pattern)} == set(ATTEMPT_ROUTES)
    study = make_study()
    alphabet = string.ascii_letters + string.digits + "-_"  # what secrets.token_urlsafe writes
    set_script_prefix(script_prefix)
    try:
        for token in [secrets.token_urlsafe(32) for _ in range(20)] + [alphabet, "-_-", "a" * 64]:
            urls = participant_urls(study, Attempt(study=study, token=token))
            assert {name: urls[name] for name in ATTEMPT_ROUTES} == {
                name: reverse(f"studies_public:{name}", args=[token]) for name in ATTEMPT_ROUTES}
            assert urls["attempt"].startswith(script_prefix)
            assert {name: attempt_url(name, token) for name in ATTEMPT_ROUTES} == {
                name: reverse(f"studies_public:{name}", args=[token]) for name in ATTEMPT_ROUTES}
        for slug in [study.slug, "a", "-_-", alphabet]:  # the join address: by the study's slug
            study.slug = slug
            assert participant_urls(study, None) == {"join": reverse("studies_public:join", args=[slug])}
        for token in ["a b", "ü", "x%41", "?#"]:  # never written by token_urlsafe: as reverse quotes them
            assert attempt_url("draft", token) == reverse("studies_public:draft", args=[token])
    finally:
        clear_script_prefix()


# --------------------------------------------------------------------------- rendering
FORM_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
HEADER_TOKEN = re.compile(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'')


def _texts_a_researcher_writes() -> list[str]:
    """Every free text field of a study (found from the model: text and char fields without choices, not the slug)."""
    from django.db import models

    return [field.name for field in Study._meta.get_fields()
            if isinstance(field, (models.CharField, models.TextField)) and not isinstance(field, models.SlugField)
            and not field.choices and field.editable]


def test_every_text_a_researcher_or_a_link_gives_is_escaped_on_every_participant_page(client, make_study, items):
    """Each free text of the study (found from the model), the screening options, the item's story, question and
    options and the link's participant id hold markup (and quotes, where the text may land in an attribute); the walk meets every page that shows them (consent,
    instructions with the practice question and screening, the question page and its htmx card, the end pages after
    finishing, timing out and stopping). Not one page holds the markup as markup; each shown text is
    there, escaped."""
    fields = _texts_a_researcher_writes()
    for wanted in ("title", "consent_text", "instructions", "screening_question", "completion_code", "bonus_currency",
                   "timeout_instruction"):
        assert wanted in fields, fields
    ids = items(6)
    marked = {name: f"\"'><i>{index}{name[:3]}</i>"[:Study._meta.get_field(name).max_length or 99]
              for index, name in enumerate(fields)}
    Item.objects.filter(pk__in=ids).update(context="Story <i>st</i>.", question="Who <i>qu</i>?",
                                           options=["<i>o1</i>", "b", "c", "d"])
    study = make_study(n_items=4, per_participant=2, bonus_per_correct="0.10",
                       practice_item=Item.objects.get(pk=ids[-1]), screening_question="q", screening_options=["a", "b"],
                       screening_pass=[0, 1])
    Study.objects.filter(pk=study.pk).update(**marked, screening_options=["<i>sc0</i>", "<i>sc1</i>"])
    study.refresh_from_db()
    pages = [_landing(client, study, PROLIFIC_PID="\"'><i>pid</i>")]
    pages.append(client.post(reverse("studies_public:join", args=[study.slug]),
                             {"consent": "yes", "PROLIFIC_PID": "\"'><i>pid</i>"}, follow=True))
    attempt = Attempt.objects.get(study=study)
    pages.append(client.post(reverse("studies_public:start", args=[attempt.token]), {"screening_answer": 0}))
    pages.append(client.post(reverse("studies_public:answer", args=[attempt.token]),
                             {"position": 0, "chosen_option": 1, "highlights": "[]"}, **HX))
    pages.append(client.post(reverse("studies_public:answer", args=[attempt.token]),
                             {"position": 1, "chosen_option": 1, "highlights": "[]"}, follow=True))
    timed_out = started_attempt(study, "late")
    Attempt.objects.filter(pk=timed_out.pk).update(deadline=timezone.now() - timedelta(hours=1))
    attempt_expire(attempt_id=timed_out.pk)
    pages.append(_hub(client, timed_out))
    left = started_attempt(study, "left")
    attempt_return(attempt_id=left.pk)
    pages.append(_hub(client, left))
    bodies = [page.content.decode() for page in pages]
    assert [page.status_code for page in pages] == [200] * 7, [
        (page.status_code, page.request["PATH_INFO"]) for page in pages]
    everything = "\n".join(bodies)
    assert "<i>" not in everything, re.findall(r".{60}<i>.{20}", everything)[:5]
    shown = ["<i>st</i>", "<i>qu</i>", "<i>o1</i>", "<i>sc0</i>", "<i>sc1</i>", "\"'><i>pid</i>"] + [
        marked[name] for name in ("title", "consent_text", "instructions", "screening_question", "completion_code",
                                  "bonus_currency", "timeout_instruction")]
    for text in shown:  # in text and in attributes (the participant id's hidden field), quotes too; Jinja2's escape
        assert str(escape(text)) in everything or django_escape(text) in everything, text  # or Django's (linebreaks)


def test_every_participant_form_and_htmx_request_carries_a_token_the_csrf_check_accepts(make_study, bilingual):
    """A browser that is checked for CSRF as a real one is (the test client skips the check unless asked) takes the
    token from each page (the forms' hidden field, the layout's htmx header) and goes through every form: consent,
    the language switch, Start, an htmx answer, the last answer, then a full study's Try again."""
    browser = Client(enforce_csrf_checks=True)

    def token(page) -> str:
        html = page.content.decode()
        header = HEADER_TOKEN.search(html)
        fields = set(FORM_TOKEN.findall(html))
        assert header and header.group(1), html[:400]
        assert fields == {header.group(1)}, (fields, header.group(1))  # every form carries the page's token
        return header.group(1)

    landing = browser.get(reverse("studies_public:landing", args=[bilingual.slug]), {"PROLIFIC_PID": "C1"})
    hub = browser.post(reverse("studies_public:join", args=[bilingual.slug]),
                       {"consent": "yes", "PROLIFIC_PID": "C1", "csrfmiddlewaretoken": token(landing)}, follow=True)
    assert hub.status_code == 200 and b'id="start"' in hub.content
    attempt = Attempt.objects.get(study=bilingual)
    switched = browser.post(reverse("studies_public:language", args=[attempt.token]),
                            {"language": "en", "csrfmiddlewaretoken": token(hub)}, follow=True)
    assert switched.status_code == 200 and b'lang="en"' in switched.content
    question = browser.post(reverse("studies_public:start", args=[attempt.token]),
                            {"csrfmiddlewaretoken": token(switched)})
    assert question.status_code == 200 and b'id="question"' in question.content
    card = browser.post(reverse("studies_public:answer", args=[attempt.token]),
                        {"position": 0, "chosen_option": 1, "highlights": "[]"}, HTTP_X_CSRFTOKEN=token(question), **HX)
    assert card.status_code == 200 and b'data-position="1"' in card.content
    done = browser.post(reverse("studies_public:answer", args=[attempt.token]),
                        {"position": 1, "chosen_option": 1, "highlights": "[]", "csrfmiddlewaretoken": token(question)},
                        follow=True)
    assert done.status_code == 200 and b'id="complete"' in done.content
    full = make_study(n_items=2, per_participant=2, raters=1)
    started_attempt(full, "first")
    hub = browser.post(reverse("studies_public:join", args=[full.slug]), {"consent": "yes", "PROLIFIC_PID": "C2",
                       "csrfmiddlewaretoken": token(done)}, follow=True)
    second = Attempt.objects.get(study=full, external_participant_id="C2")
    page = browser.post(reverse("studies_public:start", args=[second.token]), {"csrfmiddlewaretoken": token(hub)})
    assert page.status_code == 200 and b'id="study-full"' in page.content
    again = browser.post(reverse("studies_public:start", args=[second.token]), {"csrfmiddlewaretoken": token(page)})
    assert again.status_code == 200 and b'id="study-full"' in again.content
    refused = browser.post(reverse("studies_public:start", args=[attempt.token]), {"csrfmiddlewaretoken": "x" * 64})
    assert refused.status_code == 403  # a wrong token is refused: the check is on
