"""Prolific's webhook endpoint: no session, no CSRF token (Prolific signs the body instead); thin."""
from __future__ import annotations

from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from studies.prolific import services
from studies.prolific.errors import WebhookRefused


@csrf_exempt
@require_POST
def webhook_view(request):
    # Prolific sends JSON; a form body was parsed (and its stream read) before the view, so the raw bytes the
    # signature covers are gone: refuse it as what it is rather than fail.
    if (request.content_type or "").lower() in ("multipart/form-data", "application/x-www-form-urlencoded"):
        return JsonResponse({"code": "webhook_refused", "detail": "A webhook delivery is a signed JSON body; the "
                             "signature of this one cannot be checked."}, status=401)
    try:
        delivery = services.webhook_receive(body=request.body, headers=request.headers)
    except WebhookRefused as error:
        return JsonResponse(error.as_dict(), status=error.http_status)
    return JsonResponse({"outcome": delivery.outcome, "detail": delivery.detail})
