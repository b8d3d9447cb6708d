"""A researcher's preview of a study: the participant's walk (consent, instructions and practice, the timed
questions with highlighting, the end pages) on the participant pages themselves, written nowhere but in the
researcher's own session.

Why a session and not a flagged attempt: a preview that writes no attempt, lease, answer or refused answer
cannot take a place, change an item's load or show up in any result, export, monitor or quota, whatever reads
those tables now or later. Only reads touch the study (its settings and the items shown); the preview's
answers, highlights and clock live in `request.session` under one key per study and go with "Start again".
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from types import SimpleNamespace

from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from foundation.numerals import is_number
from foundation.roles import researcher_required
from studies import services
from studies.content import (
    clean_answer,
    clean_highlights,
    draft_save_wanted,
    matching_highlights,
    parse_highlights,
    shown_item,
)
from studies.errors import AnswerInvalid, DraftStale
from studies.models import DEFAULT_CONSENT_TEXT, AttemptStatus, Study
from studies.preview import preview_item, preview_items
from studies.views.drafts import draft_json, stale_json
from studies.views.participant_pages import render_page
from studies.views.participants import end_links

SESSION_KEY = "study_preview:{slug}"
STEPS = ("consent", "instructions", "questions", "end")
END_KINDS = {"finished": AttemptStatus.FINISHED, "expired": AttemptStatus.EXPIRED, "returned": AttemptStatus.RETURNED,
             "screened_out": AttemptStatus.SCREENED_OUT}


@dataclass
class Walk:
    """Where a researcher's preview of one study stands (kept in the session as a dict)."""

    step: str = "consent"
    items: list | None = None       # item ids shown, in order
    position: int = 0                # the question shown now
    answers: list | None = None      # [{"item", "chosen", "correct", "highlights"}]
    drafts: dict | None = None       # position (str) -> highlights
    revisions: dict | None = None    # position (str) -> how many times its draft was saved
    shown_at: dict | None = None     # position (str) -> epoch seconds when first shown
    deadline: float = 0.0            # epoch seconds
    end: str = ""                    # finished | expired | returned

    @classmethod
    def of(cls, request, study: Study) -> Walk:
        data = request.session.get(SESSION_KEY.format(slug=study.slug)) or {}
        walk = cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        if walk.step not in STEPS:
            walk = cls()
        walk.items, walk.answers = walk.items or [], walk.answers or []
        walk.drafts, walk.shown_at, walk.revisions = walk.drafts or {}, walk.shown_at or {}, walk.revisions or {}
        return walk

    def keep(self, request, study: Study) -> None:
        request.session[SESSION_KEY.format(slug=study.slug)] = dict(self.__dict__)

    def seconds_left(self, study: Study, now: float) -> int:
        left = self.deadline - now
        limit = study.question_time_limit_seconds
        shown = self.shown_at.get(str(self.position))
        if limit and shown is not None:
            left = min(left, shown + limit - now)
        return max(0, int(left))

    def advance(self, study: Study, now: float) -> None:
        """Move past questions whose time is up, or to the end when the whole time is."""
        if self.step != "questions":
            return
        limit = study.question_time_limit_seconds
        while self.position < len(self.items):
            if now > self.deadline:
                self.step, self.end = "end", "expired"
                return
            shown = self.shown_at.setdefault(str(self.position), now)
            if limit and now > shown + limit:
                self.position += 1
                continue
            return
        self.step, self.end = "end", "finished"


def _passes(request, study: Study) -> bool:
    """The preview's screening answer: one that does not pass (or none) ends the walk on the screen-out page."""
    answer = request.POST.get("screening_answer", "")
    return is_number(answer, most_digits=9) and study.screening_passes(int(answer))


def _urls(study: Study) -> dict:
    name = "studies:study_preview_"
    return {"join": reverse(name + "step", args=[study.slug, "consent"]),
            "start": reverse(name + "step", args=[study.slug, "start"]),
            "attempt": reverse("studies:study_preview", args=[study.slug]),
            "answer": reverse(name + "answer", args=[study.slug]),
            "return": reverse(name + "step", args=[study.slug, "return"]),
            "draft": reverse(name + "draft", args=[study.slug]),
            "practice": reverse(name + "practice", args=[study.slug]),
            "language": ""}


def _shown(study: Study, item_id: int):
    item = preview_item(item_id)
    return shown_item(context=item.context, question=item.question, options=item.options,
                      translations=item.translations, language=study.language)


def _page(request, study: Study, template: str, walk: Walk, context: dict, status: int = 200) -> HttpResponse:
    """A participant page of the preview: the preview's own addresses, no language switch, the banner."""
    urls = _urls(study)
    fake = SimpleNamespace(token=f"preview-{study.slug}", status=END_KINDS.get(walk.end, AttemptStatus.STARTED),
                           language=study.language, deadline=None, ended_at=None, external_participant_id="preview")
    return render_page(request, study, template, {
        "attempt": fake, "urls": urls, "language_switch": [], "preview": True, "external": {},
        "preview_restart_url": reverse("studies:study_preview_step", args=[study.slug, "restart"]),
        "preview_end_urls": {kind: reverse("studies:study_preview_end", args=[study.slug, kind]) for kind in END_KINDS},
        "practice_url": urls["practice"], **context,
    }, status=status, chosen=study.language)


def _question_page(request, study: Study, walk: Walk, now: float, *, partial: bool = False, errors=None,
                   status: int = 200) -> HttpResponse:
    shown = _shown(study, walk.items[walk.position])
    question = SimpleNamespace(lease=SimpleNamespace(position=walk.position), number=walk.position + 1,
                               total=len(walk.items), answered=len(walk.answers),
                               seconds_left=walk.seconds_left(study, now))
    draft = matching_highlights(context=shown.context, highlights=walk.drafts.get(str(walk.position)) or [])
    template = "studies/public/question.html#question" if partial else "studies/public/question.html"
    return _page(request, study, template, walk, {
        "question": question, "shown": shown, "draft_json": json.dumps(draft, ensure_ascii=False),
        "draft_revision": walk.revisions.get(str(walk.position), 0), "draft_recheck": True,
        "draft_url": _urls(study)["draft"], "errors": errors or {},
        "question_limit_first": bool(study.question_time_limit_seconds)
        and walk.deadline - now > question.seconds_left,
    }, status=status)


def _end_page(request, study: Study, walk: Walk) -> HttpResponse:
    correct = sum(1 for a in walk.answers if a["correct"])
    counts = {"answered": len(walk.answers), "correct": correct, "bonus": study.bonus_for(correct)}
    status = END_KINDS.get(walk.end, AttemptStatus.FINISHED)
    template = "studies/public/complete.html" if status == AttemptStatus.FINISHED else "studies/public/ended.html"
    if status == AttemptStatus.SCREENED_OUT:
        template = "studies/public/screened_out.html"
    # Shown as a participant who came from Prolific sees it.
    return _page(request, study, template, walk, {"counts": counts, "bonus": counts["bonus"],
                                                  **end_links(study, status, from_prolific=True)})


@researcher_required
def study_preview_view(request, slug: str):
    """The preview's one address, like an attempt's: consent, instructions, the current question or the end."""
    study = get_object_or_404(Study, slug=slug)
    walk = Walk.of(request, study)
    now = time.time()
    walk.advance(study, now)
    walk.keep(request, study)
    if walk.step == "consent":
        return _page(request, study, "studies/public/consent.html", walk,
                     {"default_consent_text": DEFAULT_CONSENT_TEXT})
    if walk.step == "instructions":
        practice = _shown(study, study.practice_item_id) if study.practice_item_id else None
        return _page(request, study, "studies/public/instructions.html", walk, {"practice": practice})
    if walk.step == "questions":
        return _question_page(request, study, walk, now, partial=bool(request.htmx))
    return _end_page(request, study, walk)


@researcher_required
@require_POST
def study_preview_step_view(request, slug: str, step: str):
    """consent (the box ticked) -> instructions; start -> the questions (the clock starts); return -> the end
    page of a participant who stopped; restart -> the consent page again, with nothing kept."""
    study = get_object_or_404(Study, slug=slug)
    walk = Walk.of(request, study)
    if step == "restart":
        walk = Walk()
    elif step == "consent" and walk.step == "consent":
        if request.POST.get("consent") != "yes":
            return _page(request, study, "studies/public/consent.html", walk,
                         {"default_consent_text": DEFAULT_CONSENT_TEXT, "consent_error": True}, status=400)
        walk.step = "instructions"
    elif step == "start" and walk.step == "instructions" and study.screening and not _passes(request, study):
        walk.step, walk.end = "end", "screened_out"  # as a participant whose screening answer does not pass
    elif step == "start" and walk.step == "instructions":
        walk.items = preview_items(study)
        walk.step, walk.position, walk.deadline = "questions", 0, time.time() + study.time_limit_seconds
        if not walk.items:
            walk.step, walk.end = "end", "finished"
    elif step == "return" and walk.step == "questions":
        walk.step, walk.end = "end", "returned"
    walk.keep(request, study)
    return redirect("studies:study_preview", slug=study.slug)


@researcher_required
def study_preview_end_view(request, slug: str, kind: str):
    """An end page as a participant sees it (finished, time is up, stopped), with the preview's answers so far."""
    study = get_object_or_404(Study, slug=slug)
    if kind not in END_KINDS:
        return redirect("studies:study_preview", slug=study.slug)
    walk = Walk.of(request, study)
    walk.end = kind
    return _end_page(request, study, walk)


@researcher_required
@require_POST
def study_preview_answer_view(request, slug: str):
    """An answer in the preview: validated as a participant's (option, confidence, highlights), kept in the
    session, then the next question (htmx) or the end page."""
    study = get_object_or_404(Study, slug=slug)
    walk = Walk.of(request, study)
    now = time.time()
    walk.advance(study, now)
    if walk.step != "questions" or str(walk.position) != request.POST.get("position"):
        walk.keep(request, study)
        return _to_walk(request, study)
    shown = _shown(study, walk.items[walk.position])
    try:
        highlights = parse_highlights(request.POST["highlights"]) if "highlights" in request.POST else \
            walk.drafts.get(str(walk.position)) or []
        option, confidence, spans = clean_answer(
            context=shown.context, n_options=len(shown.options), chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None, highlights=highlights)
    except AnswerInvalid as invalid:
        return _question_page(request, study, walk, now, partial=bool(request.htmx), errors=invalid.messages,
                              status=invalid.http_status)
    item = preview_item(walk.items[walk.position])
    walk.answers.append({"item": item.pk, "chosen": option, "confidence": confidence, "highlights": spans,
                         "correct": option == item.answer_index})
    walk.position += 1
    walk.advance(study, now)
    walk.keep(request, study)
    if request.htmx and walk.step == "questions":
        return _question_page(request, study, walk, now, partial=True)
    return _to_walk(request, study)


def _to_walk(request, study: Study) -> HttpResponse:
    url = reverse("studies:study_preview", args=[study.slug])
    if request.htmx:
        response = HttpResponse(status=204)
        response.headers["HX-Redirect"] = url
        return response
    return redirect(url)


@researcher_required
def study_preview_draft_view(request, slug: str):
    """The preview's highlight draft (as a participant's: GET reads, POST replaces, only for the open question)."""
    if request.method not in ("GET", "POST"):
        return JsonResponse({"code": "method_not_allowed", "detail": "GET or POST."}, status=405)
    study = get_object_or_404(Study, slug=slug)
    walk = Walk.of(request, study)
    walk.advance(study, time.time())
    data = request.POST if request.method == "POST" else request.GET
    if walk.step != "questions" or str(walk.position) != (data.get("position") or ""):
        return JsonResponse({"code": "draft_not_open", "detail": "This question is not open.",
                             "continue_url": reverse("studies:study_preview", args=[study.slug])}, status=409)
    shown = _shown(study, walk.items[walk.position])
    key = str(walk.position)
    stored = matching_highlights(context=shown.context, highlights=walk.drafts.get(key) or [])
    revision = walk.revisions.get(key, 0)
    if request.method == "POST":
        try:
            spans = clean_highlights(context=shown.context, highlights=parse_highlights(data.get("highlights")))
            if not draft_save_wanted(revision=data.get("revision"), current=revision, stored=lambda: stored,
                                     spans=spans):
                return draft_json(position=walk.position, highlights=stored, revision=revision)
        except DraftStale as refusal:
            return stale_json(refusal, _urls(study)["attempt"])
        except AnswerInvalid as invalid:
            return JsonResponse({"code": invalid.code, "errors": invalid.messages}, status=invalid.http_status)
        walk.drafts[key], walk.revisions[key] = spans, revision + 1
        walk.keep(request, study)
        return draft_json(position=walk.position, highlights=spans, revision=revision + 1)
    return draft_json(position=walk.position, highlights=stored, revision=revision)


@researcher_required
@require_POST
def study_preview_practice_view(request, slug: str):
    """The practice question's check, as participants get it (nothing is stored for them either)."""
    study = get_object_or_404(Study, slug=slug)
    if study.practice_item_id is None:
        return redirect("studies:study_preview", slug=study.slug)
    try:
        right = services.practice_check(
            study=study, language=study.language, chosen_option=request.POST.get("chosen_option"),
            confidence=request.POST.get("confidence") or None,
            highlights=parse_highlights(request.POST.get("highlights")))
    except AnswerInvalid as invalid:
        return render_page(request, study, "studies/public/practice_result.html", {"errors": invalid.messages},
                           status=invalid.http_status, chosen=study.language)
    return render_page(request, study, "studies/public/practice_result.html", {"right": right, "errors": {}},
                       chosen=study.language)
