"""What the annotation pages share: the options list, the stage bar, running a service call."""
from __future__ import annotations

from typing import Callable, TypeVar

from detectbench_web.error_mapping import REFUSED, add_form_errors, as_service_error
from detectbench_web.errors import ServiceError

from .. import selectors
from ..models import Stage

T = TypeVar("T")

def item_options(item) -> list[dict]:
    return [{"index": i, "text": t, "correct": i == item.answer_index} for i, t in enumerate(item.options)]


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


def stage_context(request, item, stage: str) -> dict:
    return {"item": item, "stage": stage, "stage_label": Stage(stage).label, "options": item_options(item),
            "lease": selectors.lease_for(user=request.user, item=item, stage=stage),
            "in_stage": item.status == stage}
