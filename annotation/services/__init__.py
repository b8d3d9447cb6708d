"""Writes of the annotation app, one module per sub-domain.

- items: import, export, versioned edits of the item store, derived facts
- leases: annotator leases (the queue of each stage), entering the workflow
- verification: keep/delete decisions and adjudication
- editing: the rewrite and clue-graph stages, drafts, reverts
- review: approve or send back
- belief, belief_review: judge labels (recorded by the judge), review policy, hand-outs, reviews

Callers may import from the sub-module or from here; a new sub-domain adds its
module and its names below.
"""
from annotation.errors import ImportRejected, ItemNotFound, NoSlot, StaleVersion, WorkflowError
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import (
    belief_draft_resolve,
    belief_lease_next,
    belief_lease_release,
    belief_review_submit,
    belief_screening_reviewed,
)
from annotation.services.editing import (
    EXPLICIT_SAVE,
    clue_graph_replace,
    clue_graph_save,
    draft_discard,
    draft_save,
    item_edit,
    item_revert,
    page_stamp,
    stage_submit,
)
from annotation.services.items import (
    ImportReport,
    derived_facts,
    item_create,
    item_import,
    item_update,
    items_export,
)
from annotation.services.leases import (
    items_enter_workflow,
    lease_next,
    lease_release,
    leases_expire,
    leases_release,
    slot_refusal,
    stage_config_set,
)
from annotation.services.review import review_submit
from annotation.services.verification import adjudication_resolve, verification_submit

__all__ = [
    # refusals (annotation.errors)
    "ImportRejected", "ItemNotFound", "NoSlot", "StaleVersion", "WorkflowError",
    "ImportReport", "derived_facts", "item_create", "item_import",
    "item_revert", "item_update", "items_export",
    "items_enter_workflow", "lease_next", "slot_refusal", "lease_release", "leases_expire", "leases_release", "stage_config_set",
    "adjudication_resolve", "verification_submit",
    "EXPLICIT_SAVE", "clue_graph_replace", "clue_graph_save", "draft_discard", "draft_save", "item_edit", "page_stamp",
    "stage_submit",
    "review_submit",
    "belief_labels_record", "belief_queue_for", "belief_queue_policy_set", "belief_draft_resolve", "belief_lease_next",
    "belief_lease_release", "belief_review_submit", "belief_screening_reviewed",
]
