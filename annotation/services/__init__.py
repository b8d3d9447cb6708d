"""Writes of the annotation app, one module per sub-domain.

- items: import, export, versioned edits and reverts of the item store, derived facts
- leases: annotator leases (the queue of each stage), entering the workflow
- verification: keep/delete decisions and adjudication
- editing: the rewrite and clue-graph stages, drafts
- review: approve or send back

Callers may import from the sub-module or from here; a new sub-domain adds its
module and its names below.
"""
from ..errors import ImportRejected, ItemNotFound, NoSlot, StaleVersion, WorkflowError
from .editing import clue_graph_replace, clue_graph_save, draft_discard, draft_save, item_edit, stage_submit
from .items import (
    ImportReport, derived_facts, item_create, item_import, item_revert, item_update,
    items_export,
)
from .leases import (
    items_enter_workflow, lease_next, lease_release, leases_expire, leases_give_back, stage_config_set,
)
from .review import review_submit
from .verification import adjudication_resolve, verification_submit

__all__ = [
    # refusals (annotation.errors)
    "ImportRejected", "ItemNotFound", "NoSlot", "StaleVersion", "WorkflowError",
    "ImportReport", "derived_facts", "item_create", "item_import",
    "item_revert", "item_update", "items_export",
    "items_enter_workflow", "lease_next", "lease_release", "leases_expire", "leases_give_back", "stage_config_set",
    "adjudication_resolve", "verification_submit",
    "clue_graph_replace", "clue_graph_save", "draft_discard", "draft_save", "item_edit", "stage_submit",
    "review_submit",
]
