"""Participant pages (no account): consent, start, the timed questions, completion.

Nothing rendered here may contain an item's answer, evidence or reasoning, or another
participant's data: templates receive only `content.ShownItem` values.
"""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.views.decorators.http import require_GET, require_POST

from . import selectors, services
from .content import ShownItem, parse_highlights, shown_item
from .errors import AnswerInvalid, AnswerRefused, StudyNotOpen
from .models import Attempt, AttemptStatus, RefusedAnswer, Study
from .selectors import Entry

COOKIE_PREFIX = "dbstudy_"
COOKIE_MAX_AGE = 14 * 24 * 3600
EXTERNAL_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


def _render(request, study: Study, template: str, context: dict, status: int = 200) -> HttpResponse:
    """Participant pages speak the study's language when it has one, else the browser's."""
    context = {"study": study, "AttemptStatus": AttemptStatus, "Reason": RefusedAnswer.Reason, **context}
    if study.language:
        with translation.override(study.language):
            response = render(request, template, context, status=status)
            response.headers["Content-Language"] = study.language
            return response
    return render(request, template, context, status=status)


def _attempt_or_404(token: str) -> Attempt:
    attempt = selectors.attempt_by_token(token)
    if attempt is None:
        raise Http404("Unknown attempt.")
    return attempt


def _shown(item, study: Study) -> ShownItem:
    return shown_item(context=item.context, question=item.question, options=item.options,
                      translations=item.translations, language=study.language)


def _hub(attempt: Attempt) -> str:
    return reverse("studies_public:attempt", args=[attempt.token])


@require_GET
def study_landing(request, slug: str):
    """The public link: resume an existing attempt, else consent. GET never takes a place (link scanners)."""
    external = {name: request.GET.get(name, "")[:100] for name in EXTERNAL_PARAMS}
    entry = selectors.study_entry(slug=slug, participant_id=external["PROLIFIC_PID"],
                                  cookie_token=request.COOKIES.get(COOKIE_PREFIX + slug, ""))
    if entry is None:
        raise Http404("Unknown study.")
    if entry.entry == Entry.RESUME:
        return redirect(_hub(entry.attempt))
    if entry.entry == Entry.CLOSED:
        return _render(request, entry.study, "studies/public/closed.html", {}, status=StudyNotOpen.http_status)
    if entry.entry == Entry.FULL:
        return _render(request, entry.study, "studies/public/full.html", {}, status=200)
    return _render(request, entry.study, "studies/public/consent.html", {"external": external})


@require_POST
def study_join_view(request, slug: str):
    study = selectors.study_public(slug)
    if study is None:
        raise Http404("Unknown study.")
    external = {name: request.POST.get(name, "") for name in EXTERNAL_PARAMS}
    if request.POST.get("consent") != "yes":
        return _render(request, study, "studies/public/consent.html",
                       {"external": external, "consent_error": True}, status=400)
    try:
        attempt = services.study_join(
            study=study, participant_id=external["PROLIFIC_PID"], external_study_id=external["STUDY_ID"],
            session_id=external["SESSION_ID"], cookie_token=request.COOKIES.get(COOKIE_PREFIX + slug, ""),
            user_agent=request.headers.get("User-Agent", ""),
        )
    except StudyNotOpen as refusal:
        return _render(request, study, "studies/public/closed.html", {}, status=refusal.http_status)
    response = redirect(_hub(attempt))
    response.set_cookie(COOKIE_PREFIX + slug, attempt.token, max_age=COOKIE_MAX_AGE, httponly=True,
                        samesite="Lax", secure=request.is_secure())
    return response


@require_GET
def attempt_view(request, token: str):
    """The attempt's one address: instructions + Start, the current question, or the end page."""
    attempt = _attempt_or_404(token)
    study = attempt.study
    if attempt.status == AttemptStatus.JOINED:
        practice = None
        if study.practice_item_id:
            practice = _shown(study.practice_item, study)
        return _render(request, study, "studies/public/instructions.html", {
            "attempt": attempt, "practice": practice,
            "practice_url": reverse("studies_public:practice", args=[attempt.token]),
        })
    question = services.attempt_question(attempt=attempt)  # closes an attempt past its deadline
    if question is not None:
        template = "studies/public/question.html#question" if request.htmx else "studies/public/question.html"
        return _render(request, study, template, _question_context(attempt, question))
    return _end_page(request, attempt)


def _question_context(attempt: Attempt, question: services.Question, **extra) -> dict:
    item = services.shown_item_of(question.lease)  # only the fields a participant may see
    return {"attempt": attempt, "question": question, "shown": _shown(item, attempt.study), **extra}


def _end_page(request, attempt: Attempt, status: int = 200) -> HttpResponse:
    study = attempt.study
    if attempt.status == AttemptStatus.FULL:
        return _render(request, study, "studies/public/full.html", {"attempt": attempt}, status=status)
    counts = selectors.attempt_counts(attempt)
    template = "studies/public/complete.html" if attempt.status == AttemptStatus.FINISHED else "studies/public/ended.html"
    return _render(request, study, template, {
        "attempt": attempt, "counts": counts, "bonus": counts["bonus"],
    }, status=status)


@require_POST
def attempt_start_view(request, token: str):
    """The explicit Start button: hands out the items and starts the clock (idempotent)."""
    attempt = _attempt_or_404(token)
    try:
        services.attempt_start(attempt_id=attempt.pk)
    except StudyNotOpen as refusal:
        return _render(request, attempt.study, "studies/public/closed.html", {}, status=refusal.http_status)
    return redirect(_hub(attempt))


@require_POST
def answer_view(request, token: str):
    """Submit the current answer; htmx gets the next question (or a redirect to the end page)."""
    try:
        response = services.response_submit(
            token=token, position=request.POST.get("position"), chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None,
            highlights=parse_highlights(request.POST.get("highlights")),
        )
    except AnswerRefused as refusal:
        if refusal.http_status == 404:
            raise Http404(refusal.message)
        attempt = _attempt_or_404(token)
        template = "studies/public/refused.html#refused" if request.htmx else "studies/public/refused.html"
        return _render(request, attempt.study, template,
                       {"attempt": attempt, "message": refusal.message, "reason": refusal.reason},
                       status=refusal.http_status)
    except AnswerInvalid as invalid:
        attempt = _attempt_or_404(token)
        question = services.attempt_question(attempt=attempt)
        if question is None:
            return redirect(_hub(attempt))
        template = "studies/public/question.html#question" if request.htmx else "studies/public/question.html"
        return _render(request, attempt.study, template,
                       _question_context(attempt, question, errors=invalid.messages), status=invalid.http_status)
    attempt = response.attempt  # finished in the same transaction if that was the last answer
    if request.htmx and response.next_question is not None:
        return _render(request, attempt.study, "studies/public/question.html#question",
                       _question_context(attempt, response.next_question))
    if request.htmx:
        redirect_response = HttpResponse(status=204)
        redirect_response.headers["HX-Redirect"] = _hub(attempt)
        return redirect_response
    return redirect(_hub(attempt))


@require_POST
def practice_view(request, token: str):
    """Check a practice answer: nothing is stored; the participant learns whether it was right.

    Telling the practice answer is safe because the practice item can never be one of the study's items
    (services refuse such a study).
    """
    attempt = _attempt_or_404(token)
    if attempt.study.practice_item_id is None:
        raise Http404("No practice question.")
    try:
        right = services.practice_check(
            study=attempt.study, chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None,
            highlights=parse_highlights(request.POST.get("highlights")))
    except AnswerInvalid as invalid:
        return _render(request, attempt.study, "studies/public/practice_result.html",
                       {"attempt": attempt, "errors": invalid.messages}, status=invalid.http_status)
    return _render(request, attempt.study, "studies/public/practice_result.html",
                   {"attempt": attempt, "right": right, "errors": {}})


@require_POST
def attempt_return_view(request, token: str):
    """The participant stops early: unanswered items go back to the pool, answers are kept."""
    attempt = _attempt_or_404(token)
    services.attempt_return(attempt_id=attempt.pk)  # idempotent: an attempt that ended stays as it is
    return redirect(_hub(attempt))
