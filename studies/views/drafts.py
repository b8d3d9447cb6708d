"""The open question's highlight draft, as JSON for the page's script (studies/static/studies/question.js).

A participant's page saves the highlights as they are made; the researcher's preview walks the same page
(studies.views.preview) and answers the same way. Each save names the draft's revision it replaces: saves can
arrive out of order (a page reloaded while its save was on the way sends its highlights again, and the old
request may still reach the server after the new one), and an older save must never overwrite a newer draft.
"""
from __future__ import annotations

from django.http import JsonResponse
from django.utils.cache import patch_cache_control

from studies import services
from studies.content import parse_highlights
from studies.errors import AnswerInvalid, DraftRefused, DraftStale
from studies.views.participant_pages import attempt_url, participant_page


def draft_json(*, position: int, highlights: list, revision: int) -> JsonResponse:
    """A draft as the page's script reads it (never cached: it changes with every save)."""
    response = JsonResponse({"position": position, "highlights": highlights, "revision": revision})
    patch_cache_control(response, no_store=True)
    return response


def stale_json(refusal: DraftStale, continue_url: str) -> JsonResponse:
    """A save refused because another came first (412): the stored draft and its revision, for a page that still
    wants its own highlights to send them again on top of it."""
    response = JsonResponse({"code": refusal.code, "detail": refusal.message, "revision": refusal.revision,
                             "highlights": refusal.highlights, "continue_url": continue_url},
                            status=refusal.http_status)
    patch_cache_control(response, no_store=True)
    return response


@participant_page
def draft_view(request, token: str):
    """GET reads the open question's draft; POST replaces it.

    POST `position`, `highlights` (the JSON list the answer form sends) and `revision` (the draft's revision
    it replaces: the page's, then each save's answer). Highlights are validated as an answer's are (400, as is
    a malformed revision); another save first is 412 with the stored draft; any question but the open one is
    refused (409; 410 when the attempt is not running, 404 for an unknown attempt) with the attempt's address
    to continue from. CSRF as every form.
    """
    if request.method not in ("GET", "POST"):
        return JsonResponse({"code": "method_not_allowed", "detail": "GET or POST."}, status=405)
    data = request.POST if request.method == "POST" else request.GET
    try:
        if request.method == "POST":
            draft = services.highlight_draft_save(token=token, position=data.get("position"),
                                                  highlights=parse_highlights(data.get("highlights")),
                                                  revision=data.get("revision"))
        else:
            draft = services.highlight_draft(token=token, position=data.get("position"))
    except DraftStale as refusal:
        return stale_json(refusal, attempt_url("attempt", token))
    except DraftRefused as refusal:
        body = {"code": refusal.code, "detail": refusal.message}
        if refusal.http_status != 404:
            body["continue_url"] = attempt_url("attempt", token)
        return JsonResponse(body, status=refusal.http_status)
    except AnswerInvalid as invalid:
        return JsonResponse({"code": invalid.code, "errors": invalid.messages}, status=invalid.http_status)
    return draft_json(position=draft.position, highlights=draft.highlights, revision=draft.revision)
