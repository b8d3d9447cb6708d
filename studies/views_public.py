"""Participant pages (no account): consent, start, the timed questions, completion.

Nothing rendered here may contain an item's answer, evidence or reasoning, or another
participant's data: templates receive only `content.ShownItem` values.
"""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.views.decorators.http import require_GET, require_POST

from . import selectors, services
from .content import AnswerInvalid, ShownItem, clean_answer, parse_highlights, shown_item
from .models import Attempt, AttemptStatus, Study, StudyStatus

COOKIE_PREFIX = "dbstudy_"
COOKIE_MAX_AGE = 14 * 24 * 3600
EXTERNAL_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


def _render(request, study: Study, template: str, context: dict, status: int = 200) -> HttpResponse:
    """Participant pages speak the study's language when it has one, else the browser's."""
    context = {"study": study, **context}
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
    study = selectors.study_public(slug)
    if study is None:
        raise Http404("Unknown study.")
    external = {name: request.GET.get(name, "")[:100] for name in EXTERNAL_PARAMS}
    existing = None
    if external["PROLIFIC_PID"]:
        existing = study.attempts.filter(external_participant_id=external["PROLIFIC_PID"]).first()
    if existing is None and request.COOKIES.get(COOKIE_PREFIX + slug):
        existing = study.attempts.filter(token=request.COOKIES[COOKIE_PREFIX + slug]).first()
    if existing is not None:
        return redirect(_hub(existing))
    if study.status != StudyStatus.OPEN:
        return _render(request, study, "studies/public/closed.html", {}, status=403)
    if not selectors.study_has_room(study):
        return _render(request, study, "studies/public/full.html", {}, status=200)
    return _render(request, study, "studies/public/consent.html", {"external": external})


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
    except services.StudyNotOpen:
        return _render(request, study, "studies/public/closed.html", {}, status=403)
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
    if attempt.status == AttemptStatus.STARTED:
        if attempt.grace_deadline() < timezone.now():
            attempt = services.attempt_expire(attempt_id=attempt.pk, overdue_only=True)
            if attempt.status != AttemptStatus.STARTED:
                return _end_page(request, attempt)
        question = services.question_open(attempt=attempt)
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
        "attempt": attempt, "counts": counts, "bonus": services.bonus_for(correct=counts["correct"], study=study),
    }, status=status)


@require_POST
def attempt_start_view(request, token: str):
    """The explicit Start button: hands out the items and starts the clock (idempotent)."""
    attempt = _attempt_or_404(token)
    try:
        services.attempt_start(attempt_id=attempt.pk)
    except services.StudyNotOpen:
        return _render(request, attempt.study, "studies/public/closed.html", {}, status=403)
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
    except services.AnswerRefused as refusal:
        if refusal.http_status == 404:
            raise Http404(str(refusal))
        attempt = _attempt_or_404(token)
        template = "studies/public/refused.html#refused" if request.htmx else "studies/public/refused.html"
        return _render(request, attempt.study, template,
                       {"attempt": attempt, "message": str(refusal), "reason": refusal.reason},
                       status=refusal.http_status)
    except AnswerInvalid as invalid:
        attempt = _attempt_or_404(token)
        question = services.question_open(attempt=attempt) if attempt.status == AttemptStatus.STARTED else None
        if question is None:
            return redirect(_hub(attempt))
        template = "studies/public/question.html#question" if request.htmx else "studies/public/question.html"
        return _render(request, attempt.study, template,
                       _question_context(attempt, question, errors=invalid.errors), status=400)
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
    item = attempt.study.practice_item
    if item is None:
        raise Http404("No practice question.")
    shown = _shown(item, attempt.study)
    try:
        option, _, _ = clean_answer(
            context=shown.context, n_options=len(shown.options), chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None,
            highlights=parse_highlights(request.POST.get("highlights")))
    except AnswerInvalid as invalid:
        return _render(request, attempt.study, "studies/public/practice_result.html",
                       {"attempt": attempt, "errors": invalid.errors}, status=400)
    return _render(request, attempt.study, "studies/public/practice_result.html",
                   {"attempt": attempt, "right": option == item.answer_index, "errors": {}})


@require_POST
def attempt_return_view(request, token: str):
    """The participant stops early: unanswered items go back to the pool, answers are kept."""
    attempt = _attempt_or_404(token)
    if attempt.status in (AttemptStatus.STARTED, AttemptStatus.JOINED):
        services.attempt_return(attempt_id=attempt.pk)
    return redirect(_hub(attempt))
