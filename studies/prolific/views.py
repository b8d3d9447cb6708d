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
    try:
        delivery = services.webhook_receive(body=request.body, headers=request.headers)
    except WebhookRefused as error:
        return JsonResponse(error.as_dict(), status=error.http_status)
    return JsonResponse({"outcome": delivery.outcome, "detail": delivery.detail})
