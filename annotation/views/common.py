"""What the annotation pages share: the options list, the stage bar, the conflict shown after a stale save."""
from __future__ import annotations

from .. import selectors
from ..diffing import content_diff
from ..models import Stage

STAGE_SCREENS = {
    Stage.VERIFICATION: "annotation:verify",
    Stage.REWRITE: "annotation:rewrite",
    Stage.CLUE_GRAPH: "annotation:clue_graph",
    Stage.REVIEW: "annotation:review",
}


def item_options(item) -> list[dict]:
    return [{"index": i, "text": t, "correct": i == item.answer_index} for i, t in enumerate(item.options)]


def error_text(exc: Exception) -> str:
    """A refused service call (ValidationError, WorkflowError) as one message for the page."""
    return "; ".join(getattr(exc, "messages", [str(exc)]))


def conflict_details(item, base_version: int) -> dict:
    """What the other person changed: the diff from the version the user started from to the stored one."""
    base = selectors.revision_snapshot(item=item, number=base_version) or {}
    return {"version": item.version, "base_version": base_version,
            "diffs": content_diff(base, item.content()),
            "authors": [r.author for r in item.revisions.filter(number__gt=base_version).select_related("author")]}


def stage_context(request, item, stage: str) -> dict:
    return {"item": item, "stage": stage, "stage_label": Stage(stage).label, "options": item_options(item),
            "lease": selectors.lease_for(user=request.user, item=item, stage=stage),
            "in_stage": item.status == stage}
