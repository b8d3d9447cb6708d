"""How participant pages are rendered: in the participant's language, and every failure as a friendly page.

Participants never meet a debug page, a traceback or a bare status line, in any mode (DEBUG too): an
unknown link is a 404 page that says what to do, a refusal a 403, an ended attempt a 410 and an
unexpected error a 500 page (logged with its traceback). The language of a page is the one the
participant chose among the study's languages, else the study's; a study in the original English
without a switch follows the browser.
"""
from __future__ import annotations

import logging
import re
from functools import lru_cache, wraps
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect
from django.urls import Resolver404, get_script_prefix, resolve, reverse
from django.utils import translation
from django.utils.cache import patch_cache_control
from django.utils.html import format_html

from foundation.database_faults import TRANSIENT_DATABASE_ERRORS
from foundation.database_faults import pool_exhausted as _pool_exhausted
from foundation.database_faults import reconnect as _reconnect
from foundation.error_mapping import REFUSED, as_service_error
from studies import page_templates
from studies.models import LANGUAGE_NAMES, Attempt, AttemptStatus, RefusedAnswer, Study

logger = logging.getLogger("studies.participants")

#: The original (English) in a URL or a form: "" would read as "not chosen".
ORIGINAL = "en"


def language_param(value: str | None) -> str | None:
    """A language as a link or form sends it ("en" = the original) as a study language; None = not chosen."""
    if value is None:
        return None
    return "" if value == ORIGINAL else value[:10]


def ui_language(study: Study | None, chosen: str | None = None) -> str | None:
    """The language of the page's own words; None = the browser's."""
    if study is None:
        return None
    language = study.language_of(chosen)
    if language:
        return language
    return ORIGINAL if len(study.languages) > 1 else None


def language_switch(request, study: Study, shown: str, attempt: Attempt | None, external: dict | None) -> list[dict]:
    """The study's languages as the switch lists them (empty when it offers one): name, link or form value."""
    if len(study.languages) < 2:
        return []
    options = []
    for code in study.languages:
        param = code or ORIGINAL
        query = {**(external or {}), "lang": param}
        options.append({
            "code": param, "name": LANGUAGE_NAMES.get(code, code), "current": code == shown,
            "url": None if attempt else f"{reverse('studies_public:landing', args=[study.slug])}?{urlencode(query)}",
        })
    return options


ATTEMPT_ROUTES = ("attempt", "start", "answer", "return", "language", "practice", "draft")


def participant_urls(study: Study, attempt: Attempt | None) -> dict:
    """The addresses a participant page's forms and links lead to (a preview passes its own)."""
    urls = {"join": _public_url("join", study.slug)}
    if attempt is not None:
        urls.update({name: f"{head}{attempt.token}{tail}"
                     for name, (head, tail) in _attempt_route_parts(get_script_prefix()).items()})
    return urls


def attempt_url(name: str, token: str) -> str:
    """`reverse("studies_public:<name>", args=[token])` for one of the ATTEMPT_ROUTES, from the route reversed once."""
    return _public_url(name, token)


_UNQUOTED = re.compile(r"[-a-zA-Z0-9_]+\Z")  # what a token (token_urlsafe) or a slug is made of: never quoted


def _public_url(name: str, argument: str) -> str:
    """`reverse("studies_public:<name>", args=[argument])`, from the route reversed once (reverse itself for an
    argument it might quote or refuse)."""
    if not _UNQUOTED.match(argument):
        return reverse(f"studies_public:{name}", args=[argument])
    head, tail = _route_parts(get_script_prefix(), name)
    return f"{head}{argument}{tail}"


_TOKEN_MARKER = "0prepared0token0"


@lru_cache(maxsize=8)
def _attempt_route_parts(script_prefix: str) -> dict[str, tuple[str, str]]:
    """Each attempt route reversed once (per script prefix) around a marker token: what comes before and after the
    token. Every page of an attempt links to all seven; reversing them on each page was a twentieth of its CPU.
    Tokens are URL-safe (`secrets.token_urlsafe`), so they need no quoting (tests compare with `reverse`)."""
    return {name: _route_parts(script_prefix, name) for name in ATTEMPT_ROUTES}


@lru_cache(maxsize=32)
def _route_parts(script_prefix: str, name: str) -> tuple[str, str]:
    """The public route `name` reversed around a marker argument (a token or a study's slug, neither ever quoted):
    what comes before it and after it."""
    head, tail = reverse(f"studies_public:{name}", args=[_TOKEN_MARKER]).split(_TOKEN_MARKER)
    return head, tail


def render_page(request, study: Study, template: str, context: dict, *, status: int = 200,
                attempt: Attempt | None = None, chosen: str | None = None) -> HttpResponse:
    """A participant page in the participant's language (the attempt's, else `chosen`, else the study's)."""
    if attempt is not None:
        chosen = attempt.language
    shown = study.language_of(chosen)
    context = {
        "study": study, "attempt": attempt, "AttemptStatus": AttemptStatus, "Reason": RefusedAnswer.Reason,
        "urls": participant_urls(study, attempt),
        "language_switch": language_switch(request, study, shown, attempt, context.get("external")),
        "shown_language": shown or ORIGINAL, **context,
    }
    if attempt is not None and request.method == "POST" and not getattr(request, "htmx", False):
        # A whole page answering a form (Start): question.js puts the attempt's address in the address bar.
        context["page_address"] = context["urls"]["attempt"]
    language = ui_language(study, chosen)
    if language is None:
        response = HttpResponse(render_participant_template(request, template, context), status=status)
    else:
        with translation.override(language):
            response = HttpResponse(render_participant_template(request, template, context), status=status)
        response.headers["Content-Language"] = language
    if attempt is not None:
        # An attempt's page shows where the attempt stands now: Back to an earlier page of it (the instructions
        # before Start) asks the server again instead of showing the stored page.
        patch_cache_control(response, no_store=True)
    return response


def render_participant_template(request, template: str, context: dict) -> str:
    """A participant page (a Jinja2 template of studies/page_templates.py) in the active language, with the view's
    values and what the pages take from the request: the CSRF token (the layout's htmx headers and the forms) and the
    language's code. `request` None: a page with no form to send (an error page; the database may be what failed)."""
    token = get_token(request) if request is not None else ""
    language = translation.get_language()
    values = {"csrf_token": token, "LANGUAGE_CODE": language, "_": page_templates.words(language),
              "csrf_input": format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', token),
              **context}
    return page_templates.render(template, values)


def error_page(request, status: int, *, study: Study | None = None, attempt: Attempt | None = None,
               what: str = "page", message: str = "", back_url: str = "") -> HttpResponse:
    """A participant's error page: what happened, that answers already given are kept, what to do next.

    Rendered without the request or any query (the database may be what failed).
    """
    if attempt is not None and study is None:
        study = attempt.study
    language = ui_language(study, attempt.language if attempt else None) or translation.get_language_from_request(
        request)
    with translation.override(language):
        context = {"status": status, "study": study, "attempt": attempt, "what": what, "message": message,
                   "back_url": back_url}
        # An htmx request (an answer) gets the card in place of the question; the layout is already on screen.
        template = "studies/public/error.html#card" if status == 503 and getattr(request, "htmx", False) else \
            "studies/public/error.html"
        try:
            html = render_participant_template(None, template, context)
        except Exception:  # the error page must never fail itself
            logger.exception("the participant error page could not be rendered")
            html = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Error</title></head><body>"
                    "<h1>Something went wrong</h1><p>Please open the study link you were given again.</p>"
                    "</body></html>")
    response = HttpResponse(html, status=status)
    response.headers["Content-Language"] = language
    return response


def participant_page(view):
    """Every outcome of a participant view is a page for people: unknown -> 404, refused -> its status, bug -> 500.

    A transient database fault is retried once on a new connection; when that fails too, the participant
    gets a "please try again" page (503): the failed transaction changed nothing, so they keep their place.
    """

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        for retry in (False, True):
            request.database_retry = retry  # the view may tell a replay of its own committed work (an answer)
            try:
                return _run(request, view, args, kwargs)
            except TRANSIENT_DATABASE_ERRORS as fault:
                if not retry and not _pool_exhausted(fault) and _reconnect():
                    logger.warning("participant page: database connection lost (%s), retrying once: %s %s",
                                   str(fault).strip().splitlines()[0] if str(fault).strip() else type(fault).__name__,
                                   request.method, request.path)
                    continue
                logger.exception("participant page: database unavailable: %s %s", request.method, request.path)
                _reconnect()
                response = error_page(request, 503, back_url=_way_back(kwargs), what="retry")
                response.headers["Retry-After"] = "2"
                return response

    return wrapper


def _run(request, view, args, kwargs):
    """The view, with every failure but a transient database fault as its participant page."""
    try:
        return view(request, *args, **kwargs)
    except TRANSIENT_DATABASE_ERRORS:
        raise
    except Http404:
        return error_page(request, 404, back_url=_way_back(kwargs))
    except (PermissionDenied, SuspiciousOperation):
        return error_page(request, 403, back_url=_way_back(kwargs))
    except REFUSED as refusal:
        error = as_service_error(refusal)
        return error_page(request, error.http_status, message=error.message, back_url=_way_back(kwargs))
    except Exception:
        logger.exception("participant page failed: %s %s", request.method, request.path)
        return error_page(request, 500, back_url=_way_back(kwargs))


def _way_back(kwargs: dict) -> str:
    """The attempt's (or the study's) address from the URL alone: no query, the database may be what failed."""
    if kwargs.get("token"):
        return reverse("studies_public:attempt", args=[kwargs["token"]])
    if kwargs.get("slug"):
        return reverse("studies_public:landing", args=[kwargs["slug"]])
    return ""


def post_only(view):
    """A form target: a GET (a reload, a pasted address) goes back to the attempt instead of a bare 405."""

    @wraps(view)
    def wrapper(request, token: str, *args, **kwargs):
        if request.method != "POST":
            return redirect("studies_public:attempt", token)
        return view(request, *args, token=token, **kwargs)

    return wrapper


@participant_page
def not_found_view(request, rest: str = ""):
    """Any address under the study links that names nothing (a mistyped or cut-off link).

    A link that lost only its trailing slash (``/s/demo?PROLIFIC_PID=...``) is redirected to the page it
    names, with its query: this catch-all route would otherwise keep Django's APPEND_SLASH from doing so.
    """
    if rest and not rest.endswith("/") and request.method in ("GET", "HEAD"):
        target = f"{request.path}/"
        match = resolve_or_none(target)
        if match is not None and match.url_name != "not_found":
            query = request.META.get("QUERY_STRING", "")
            return redirect(f"{target}?{query}" if query else target, permanent=False)
    return error_page(request, 404)


def resolve_or_none(path: str):
    """The route a path resolves to, or None."""
    try:
        return resolve(path)
    except Resolver404:
        return None
