"""Participant pages (no account): consent, start, the timed questions, completion.

Nothing rendered here may contain an item's answer, evidence or reasoning, or another
participant's data: templates receive only `content.ShownItem` values. Every outcome is a
page for people (`participant_pages`): no debug page, traceback or bare status in any mode.
"""
from __future__ import annotations

import json
import math

from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.http import require_GET

from foundation.roles import is_researcher
from foundation.throttling import JoinThrottle
from studies import services
from studies.content import ShownItem, parse_highlights, shown_item
from studies.errors import (
    AnswerInvalid,
    AnswerRefused,
    ParticipantIdTaken,
    PlaceholderId,
    StudyNotOpen,
)
from studies.links import EXTERNAL_PARAMS, completion_link, is_prolific_url, unfilled_fields
from studies.models import DEFAULT_CONSENT_TEXT, Attempt, AttemptStatus, RefusedAnswer, Study
from studies.selectors.participants import (
    Entry,
    attempt_by_token,
    attempt_counts,
    attempt_resumable,
    study_entry,
    study_public,
)
from studies.views.participant_pages import (
    attempt_url,
    error_page,
    language_param,
    participant_page,
    post_only,
    render_page,
)

COOKIE_PREFIX = "dbstudy_"
COOKIE_MAX_AGE = 14 * 24 * 3600
ANSWER_WITH = "answer_with"  # the consent form's field: "page" for the attempt's page in the answer


def _shown(item, study: Study, language: str | None) -> ShownItem:
    return shown_item(context=item.context, question=item.question, options=item.options,
                      translations=item.translations, language=study.language_of(language))


def _hub(attempt: Attempt) -> str:
    return attempt_url("attempt", attempt.token)


def _to_hub(attempt: Attempt) -> HttpResponseRedirect:
    """A redirect to the attempt's page (`redirect(url)` would first try the address as a view name to reverse)."""
    return HttpResponseRedirect(_hub(attempt))


def _consent(request, study: Study, external: dict, **extra) -> dict:
    """The consent page's context: a study without its own consent text shows the standard one; a researcher
    signed in is told that joining takes a real place, and where the preview is."""
    preview_url = reverse("studies:study_preview", args=[study.slug]) if is_researcher(request.user) else ""
    return {"external": external, "default_consent_text": DEFAULT_CONSENT_TEXT, "preview_url": preview_url, **extra}


def _placeholder_page(request, study: Study, external: dict, fields: list[str], chosen: str | None) -> HttpResponse:
    """The link's ids were never filled in by the platform: say which, take no place."""
    return render_page(request, study, "studies/public/placeholder.html", {
        "fields": [{"name": name, "value": external.get(name, "")} for name in fields],
        "preview_url": reverse("studies:study_preview", args=[study.slug]) if is_researcher(request.user) else "",
    }, status=PlaceholderId.http_status, chosen=chosen)


def _taken_page(request, study: Study, chosen: str | None) -> HttpResponse:
    """The participant id has an attempt this browser may not open: say so, show nothing of that attempt."""
    return render_page(request, study, "studies/public/taken.html", {}, status=ParticipantIdTaken.http_status,
                       chosen=chosen)


def _unknown_attempt(request) -> HttpResponse:
    return error_page(request, 404, what="attempt")


@require_GET
@participant_page
def study_landing(request, slug: str):
    """The public link: resume an existing attempt, else consent. GET never takes a place (link scanners)."""
    external = {name: request.GET.get(name, "")[:100] for name in EXTERNAL_PARAMS}
    unfilled = unfilled_fields(external)
    if unfilled:  # a link whose ids the platform never filled in: no consent, no place
        study = study_public(slug)
        if study is None:
            return error_page(request, 404, what="study")
        own = attempt_resumable(study=study, cookie_token=request.COOKIES.get(COOKIE_PREFIX + slug, ""))
        if own is not None:
            return _to_hub(own)
        return _placeholder_page(request, study, external, unfilled, language_param(request.GET.get("lang")))
    entry = study_entry(slug=slug, participant_id=external["PROLIFIC_PID"],
                                  session_id=external["SESSION_ID"],
                                  cookie_token=request.COOKIES.get(COOKIE_PREFIX + slug, ""))
    if entry is None:
        return error_page(request, 404, what="study")
    if entry.entry == Entry.RESUME:
        return _to_hub(entry.attempt)
    chosen = language_param(request.GET.get("lang"))
    if entry.entry == Entry.TAKEN:
        return _taken_page(request, entry.study, chosen)
    if entry.entry == Entry.CLOSED:
        return render_page(request, entry.study, "studies/public/closed.html", {}, status=StudyNotOpen.http_status,
                           chosen=chosen)
    if entry.entry == Entry.FULL:
        return render_page(request, entry.study, "studies/public/full.html", {}, chosen=chosen)
    return render_page(request, entry.study, "studies/public/consent.html", _consent(request, entry.study, external),
                       chosen=chosen)


@participant_page
def study_join_view(request, slug: str):
    """Consent: joins (or finds the browser's attempt again) and sets the attempt's cookie. The form the page sends
    asks (`answer_with=page`) for the attempt's page itself in the answer, not a redirect to it: a class joining at
    once is served three requests per participant instead of four (as Start answers with the first question). The
    page names the attempt's address for question.js to show; without script a reload sends the consent again, which
    finds the same attempt. A POST built by hand (no field) is redirected, so scripts reading `Location` still work."""
    if request.method != "POST":
        return redirect("studies_public:landing", slug)
    study = study_public(slug)
    if study is None:
        return error_page(request, 404, what="study")
    external = {name: request.POST.get(name, "") for name in EXTERNAL_PARAMS}
    chosen = language_param(request.POST.get("language"))
    if request.POST.get("consent") != "yes":
        return render_page(request, study, "studies/public/consent.html",
                           _consent(request, study, external, consent_error=True), status=400, chosen=chosen)
    wait = JoinThrottle().wait_if_over(request)  # per address: a class behind one NAT fits, a join flood does not
    if wait is not None:
        response = error_page(request, 429, study=study, what="join", back_url=reverse("studies_public:landing",
                                                                                       args=[study.slug]))
        response.headers["Retry-After"] = str(math.ceil(wait))  # whole seconds, never before the window allows
        return response
    try:
        attempt = services.study_join(
            study=study, participant_id=external["PROLIFIC_PID"], external_study_id=external["STUDY_ID"],
            session_id=external["SESSION_ID"], cookie_token=request.COOKIES.get(COOKIE_PREFIX + slug, ""),
            user_agent=request.headers.get("User-Agent", ""), language=chosen,
        )
    except StudyNotOpen as refusal:
        return render_page(request, study, "studies/public/closed.html", {}, status=refusal.http_status,
                           chosen=chosen)
    except ParticipantIdTaken:
        return _taken_page(request, study, chosen)
    except PlaceholderId as refusal:
        return _placeholder_page(request, study, external, refusal.fields, chosen)
    if request.POST.get(ANSWER_WITH) == "page":  # the consent form as the page sends it
        attempt.study = study
        response = _attempt_page(request, attempt)
    else:  # a POST built by hand (a script, an integration): redirected to the attempt's address, as always
        response = _to_hub(attempt)
    response.set_cookie(COOKIE_PREFIX + slug, attempt.token, max_age=COOKIE_MAX_AGE, httponly=True,
                        samesite="Lax", secure=request.is_secure())
    return response


@require_GET
@participant_page
def attempt_view(request, token: str):
    """The attempt's one address: instructions + Start, the current question, or the end page."""
    attempt = attempt_by_token(token)
    if attempt is None:
        return _unknown_attempt(request)
    return _attempt_page(request, attempt)


def _attempt_page(request, attempt: Attempt) -> HttpResponse:
    """What the attempt's address shows now: the instructions, the current question, or the end page."""
    if attempt.status == AttemptStatus.JOINED:
        return _instructions(request, attempt)
    question = services.attempt_question(attempt=attempt)  # closes an attempt past its deadline
    if question is not None:
        template = "studies/public/question.html#question" if request.htmx else "studies/public/question.html"
        return render_page(request, attempt.study, template, _question_context(attempt, question), attempt=attempt)
    return _end_page(request, attempt)


def _instructions(request, attempt: Attempt, *, screening_error: bool = False, status: int = 200) -> HttpResponse:
    """Instructions, practice, the screening question (if the study has one) and Start."""
    study = attempt.study
    practice = _shown(study.practice_item, study, attempt.language) if study.practice_item_id else None
    return render_page(request, study, "studies/public/instructions.html", {
        "practice": practice, "practice_url": attempt_url("practice", attempt.token),
        "screening_error": screening_error,
    }, status=status, attempt=attempt)


def _question_context(attempt: Attempt, question: services.Question, **extra) -> dict:
    item = services.shown_item_of(question.lease)  # only the fields a participant may see
    # In the language its lease recorded as shown (the answer form sends it back with the version, so that an answer
    # is checked on this page's text whatever another tab shows meanwhile).
    shown = _shown(item, attempt.study, question.lease.shown_language)
    # The highlights saved so far on this question (another tab, another browser, before a reload).
    draft = [] if question.first_shown else services.draft_of(attempt=attempt, lease=question.lease,
                                                             context=shown.context)
    limit_first = bool(attempt.study.question_time_limit_seconds) and attempt.seconds_left() > question.seconds_left
    return {"question": question, "shown": shown, "draft_json": json.dumps(draft, ensure_ascii=False),
            "draft_revision": 0 if question.first_shown else question.lease.draft_revision,
            "draft_recheck": not question.first_shown,
            "question_limit_first": limit_first,
            "draft_url": attempt_url("draft", attempt.token),
            "shown_as": {"version": item.content_version, "language": question.lease.shown_language}, **extra}


def _end_page(request, attempt: Attempt, status: int = 200) -> HttpResponse:
    study = attempt.study
    if attempt.status == AttemptStatus.FULL:
        return render_page(request, study, "studies/public/full.html", {}, status=status, attempt=attempt)
    counts = attempt_counts(attempt)
    finished = attempt.status == AttemptStatus.FINISHED
    template = "studies/public/complete.html" if finished else "studies/public/ended.html"
    if attempt.status == AttemptStatus.SCREENED_OUT:
        template = "studies/public/screened_out.html"
    time_up = gettext(QUESTIONS_TIMED_OUT) if counts["all_timed_out"] else ""
    return render_page(request, study, template, {"counts": counts, "bonus": counts["bonus"], "questions_time_up": time_up,
                                                  **end_links(study, attempt.status, bool(attempt.external_participant_id))},
                       status=status, attempt=attempt)


QUESTIONS_TIMED_OUT = gettext_noop("The time for each of your questions ran out before it was answered.")


def end_links(study: Study, status: str, from_prolific: bool) -> dict:
    """The end page's code and its way back to the platform: the completion code (finished) or the time-out code
    (expired) or the screen-out code (screened out), and the completion link for it (the study's completion URL,
    else Prolific's for a participant who
    came from Prolific); a participant who stopped or was closed gets neither."""
    if status == AttemptStatus.FINISHED:
        code = study.completion_code
    elif status == AttemptStatus.EXPIRED:
        code = study.timeout_completion_code
    elif status == AttemptStatus.SCREENED_OUT:
        code = study.screen_out_code
    else:
        return {"code": "", "return_url": "", "return_to_prolific": False}
    url = completion_link(completion_url=study.completion_url, code=code, from_prolific=from_prolific,
                          finished=status == AttemptStatus.FINISHED)
    return {"code": code, "return_url": url, "return_to_prolific": bool(url) and is_prolific_url(url)}


@post_only
@participant_page
def attempt_start_view(request, token: str):
    """The explicit Start button: hands out the items and starts the clock (idempotent). With a screening question,
    its answer comes first: a passing one starts, any other screens the participant out.

    The answer is the attempt's page itself (the first question), not a redirect to it: a class starting at once
    is served one request per participant instead of two, and each participant waits one round trip less. The
    page names the attempt's address (`page_address`), which question.js puts in the address bar in place of this
    one, so a reload or the timer's reload asks for the attempt's page; without script a reload sends Start again,
    which is idempotent and shows the same page.
    """
    attempt = attempt_by_token(token)
    if attempt is None:
        return _unknown_attempt(request)
    study = attempt.study
    try:
        if study.screening and attempt.status == AttemptStatus.JOINED:
            option = _screening_option(request.POST.get("screening_answer"), study)
            if option is None:
                return _instructions(request, attempt, screening_error=True, status=400)
            # The attempt read above is handed down, not read again by the services.
            attempt = services.attempt_screening_answer(attempt_id=attempt.pk, option=option, attempt=attempt)
        else:
            attempt = services.attempt_start(attempt_id=attempt.pk, attempt=attempt)
    except StudyNotOpen as refusal:
        return render_page(request, study, "studies/public/closed.html", {}, status=refusal.http_status,
                           attempt=attempt)
    attempt.study = study  # a screened-out attempt comes back as a new instance
    return _attempt_page(request, attempt)


def _screening_option(value: str | None, study: Study) -> int | None:
    try:
        option = int(value or "")
    except ValueError:
        return None
    return option if 0 <= option < len(study.screening_options) else None


@post_only
@participant_page
def answer_view(request, token: str):
    """Submit the current answer; htmx gets the next question (or a redirect to the end page)."""
    try:
        # An answer without a highlights field (a page without script) takes the question's saved draft.
        highlights = parse_highlights(request.POST["highlights"]) if "highlights" in request.POST else \
            services.USE_DRAFT
        response = services.response_submit(
            token=token, position=request.POST.get("position"), chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None, highlights=highlights,
            shown_version=request.POST.get("shown_version"), shown_language=request.POST.get("shown_language"),
        )
    except AnswerRefused as refusal:
        attempt = attempt_by_token(token)
        if refusal.reason == RefusedAnswer.Reason.ALREADY_ANSWERED and getattr(request, "database_retry", False):
            # The first try's commit went through but its connection dropped before the page was sent: the
            # answer is stored, so the participant goes on to the next question.
            return _after_answer(request, attempt)
        if refusal.http_status == 404 or attempt is None:
            return error_page(request, 404, attempt=attempt, what="question" if attempt else "attempt")
        if refusal.reason == RefusedAnswer.Reason.CONTENT_CHANGED:  # the question again, as it is now
            return _question_again(request, attempt, refusal.http_status, notice=refusal.message)
        template = "studies/public/refused.html#refused" if request.htmx else "studies/public/refused.html"
        return render_page(request, attempt.study, template, {"message": refusal.message, "reason": refusal.reason},
                           status=refusal.http_status, attempt=attempt)
    except AnswerInvalid as invalid:
        attempt = attempt_by_token(token)
        if attempt is None:
            return _unknown_attempt(request)
        return _question_again(request, attempt, invalid.http_status, errors=invalid.messages)
    attempt = response.attempt  # finished in the same transaction if that was the last answer
    if request.htmx and response.next_question is not None:
        return render_page(request, attempt.study, "studies/public/question.html#question",
                           _question_context(attempt, response.next_question), attempt=attempt)
    return _after_answer(request, attempt)


def _question_again(request, attempt: Attempt, status: int, **extra) -> HttpResponse:
    """The open question shown again after a refused or invalid answer (with why), else the attempt's page."""
    question = services.attempt_question(attempt=attempt)
    if question is None:
        return _to_hub(attempt)
    template = "studies/public/question.html#question" if request.htmx else "studies/public/question.html"
    return render_page(request, attempt.study, template, _question_context(attempt, question, **extra), status=status,
                       attempt=attempt)


def _after_answer(request, attempt: Attempt) -> HttpResponse:
    """To the attempt's page (its next question or the end page); htmx follows with HX-Redirect."""
    if request.htmx:
        redirect_response = HttpResponse(status=204)
        redirect_response.headers["HX-Redirect"] = _hub(attempt)
        return redirect_response
    return _to_hub(attempt)


@post_only
@participant_page
def practice_view(request, token: str):
    """Check a practice answer: nothing is stored; the participant learns whether it was right.

    Telling the practice answer is safe because the practice item can never be one of the study's items
    (services refuse such a study).
    """
    attempt = attempt_by_token(token)
    if attempt is None:
        return _unknown_attempt(request)
    if attempt.study.practice_item_id is None:
        return error_page(request, 404, attempt=attempt, what="practice")
    try:
        right = services.practice_check(
            study=attempt.study, language=attempt.language, chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None,
            highlights=parse_highlights(request.POST.get("highlights")))
    except AnswerInvalid as invalid:
        right, errors, status = None, invalid.messages, invalid.http_status
    else:
        errors, status = {}, 200
    # htmx swaps the result into the instructions page; a browser without it (JavaScript off) gets a whole page
    # with the way back to the instructions and Start.
    template = "studies/public/practice_result.html" if request.htmx else "studies/public/practice_page.html"
    return render_page(request, attempt.study, template, {"right": right, "errors": errors}, status=status,
                       attempt=attempt)


@post_only
@participant_page
def attempt_return_view(request, token: str):
    """The participant stops early: unanswered items go back to the pool, answers are kept."""
    attempt = attempt_by_token(token)
    if attempt is None:
        return _unknown_attempt(request)
    services.attempt_return(attempt_id=attempt.pk)  # idempotent: an attempt that ended stays as it is
    return _to_hub(attempt)


@post_only
@participant_page
def attempt_language_view(request, token: str):
    """The language switch: the attempt's pages and items from now on in another of the study's languages."""
    attempt = attempt_by_token(token)
    if attempt is None:
        return _unknown_attempt(request)
    services.attempt_set_language(attempt_id=attempt.pk, language=language_param(request.POST.get("language")) or "")
    return _to_hub(attempt)
