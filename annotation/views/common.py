"""What the annotation pages share: the options list, the stage bar, running a service call, moving on after a
decision (auto-advance)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from annotation import selectors, services
from annotation.models import Stage
from annotation.rules import rule_range, stage_rules
from foundation.error_mapping import REFUSED, add_form_errors, as_service_error
from foundation.errors import ServiceError

T = TypeVar("T")

#: The session key of the annotator's auto-advance setting (absent: on).
AUTO_ADVANCE_KEY = "annotation_auto_advance"


def item_options(item) -> list[dict]:
    return [{"index": i, "number": i + 1, "text": t, "correct": i == item.answer_index}
            for i, t in enumerate(item.options)]


def attempt(call: Callable[[], T], *, form=None) -> tuple[T | None, ServiceError | None]:
    """Run one service call: its result, or the refusal (as a ServiceError, added to `form` when given).

    The page answers with `refusal.http_status`; a StaleVersion refusal carries the
    current item for the conflict view.
    """
    try:
        return call(), None
    except REFUSED as exc:
        refusal = as_service_error(exc)
        if form is not None:
            add_form_errors(form, refusal)
        return None, refusal


def auto_advance(request) -> bool:
    """Whether the annotator goes straight to the next item after a decision (on unless they turned it off).

    Kept in the session: a per-login preference of the screens, not data about the
    work; it needs no table (and no migration), and after a new login it is on again,
    which is what most annotators want.
    """
    return bool(request.session.get(AUTO_ADVANCE_KEY, True))


def next_item(request, stage: str) -> HttpResponse:
    """Lease the user the next item of the stage and open its screen; the queue (with a note) when there is none."""
    lease = services.lease_next(user=request.user, stage=stage)
    if lease is None:
        messages.info(request, _("No more items for you in %(stage)s.") % {"stage": Stage(stage).label})
        return redirect("annotation:queue")
    return redirect(Stage(stage).screen, pk=lease.item_id)


def after_decision(request, stage: str, *, message: str, stay: str) -> HttpResponse:
    """After a submitted decision: the next item of the stage with auto-advance on, else the page `stay`."""
    messages.success(request, message)
    if auto_advance(request):
        return next_item(request, stage)
    return redirect(stay)


def stage_context(request, item, stage: str) -> dict:
    return {"item": item, "stage": stage, "stage_label": Stage(stage).label, "options": item_options(item),
            "lease": selectors.lease_for(user=request.user, item=item, stage=stage),
            "slot_refusal": services.slot_refusal(item=item, stage=stage, user=request.user),
            "in_stage": item.status == stage, "auto_advance": auto_advance(request),
            "sent_back": selectors.open_send_back(item=item),
            "rules": stage_rules(stage), "rule_range": rule_range(stage)}
