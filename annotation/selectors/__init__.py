"""Reads of the annotation app, one module per sub-domain.

- items: item lists and filters, revisions, history
- workflow: stage configurations, the work queue, an annotator's lease and draft, open adjudications
- progress: the researchers' progress board and verification agreement

Callers may import from the sub-module or from here; a new sub-domain adds its
module and its names below.
"""
from .items import (
    item_browser, item_changes_since_previous, item_changes_since_stage, item_conflict, item_detail, item_facets,
    item_history, item_list, item_revisions, revision_snapshot,
)
from .progress import agreement_rows, progress_board, verification_agreement
from .workflow import (
    adjudication_detail, draft_for, lease_for, open_adjudications, queue_overview, stage_configs, verification_by,
)

__all__ = [
    "item_browser", "item_changes_since_previous", "item_changes_since_stage", "item_conflict", "item_detail",
    "item_facets", "item_history", "item_list", "item_revisions", "revision_snapshot",
    "agreement_rows", "progress_board", "verification_agreement",
    "adjudication_detail", "draft_for", "lease_for", "open_adjudications", "queue_overview", "stage_configs",
    "verification_by",
]
