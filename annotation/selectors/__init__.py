"""Reads of the annotation app, one module per sub-domain.

- items: item lists and filters, revisions, history
- workflow: stage configurations, the work queue, an annotator's lease and draft, open adjudications
- progress: the researchers' progress board and verification agreement

Callers may import from the sub-module or from here; a new sub-domain adds its
module and its names below.
"""
from .items import item_conflict, item_facets, item_history, item_list, item_revisions, revision_snapshot
from .progress import progress_board, verification_agreement
from .workflow import draft_for, lease_for, open_adjudications, queue_overview, stage_configs

__all__ = [
    "item_conflict", "item_facets", "item_history", "item_list", "item_revisions", "revision_snapshot",
    "progress_board", "verification_agreement",
    "draft_for", "lease_for", "open_adjudications", "queue_overview", "stage_configs",
]
