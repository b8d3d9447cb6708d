"""Reads of the annotation app, one module per sub-domain.

- items: item lists and filters, revisions, history
- workflow: stage configurations, the work queue, an annotator's lease and draft, open adjudications
- progress: the researchers' progress board and verification agreement
- belief, belief_trust: judge labels, reviews, review queues, the judge's suggestions in the
  workflow screens; trust figures of a queue
- versions: an item's content at a past content version (what a result, label or answer saw)

Callers may import from the sub-module or from here; a new sub-domain adds its
module and its names below.
"""
from annotation.selectors.belief import (
    belief_labels,
    belief_lease_for,
    belief_queues,
    belief_reviews,
    clue_graph_draft,
    final_label,
    judge_hidden,
    provenance,
    screening_suggestions,
    screening_view,
    shown_label,
)
from annotation.selectors.belief_trust import belief_trust
from annotation.selectors.items import (
    content_changes_since,
    item_browser,
    item_changes_since_previous,
    item_changes_since_stage,
    item_conflict,
    item_detail,
    item_facets,
    item_history,
    item_list,
    item_revisions,
    item_splits,
    revision_snapshot,
)
from annotation.selectors.progress import agreement_rows, progress_board, verification_agreement
from annotation.selectors.versions import item_contents_at
from annotation.selectors.workflow import (
    adjudication_detail,
    curation_counts,
    draft_for,
    lease_for,
    open_adjudications,
    open_send_back,
    queue_overview,
    review_by,
    sent_back_items,
    stage_configs,
    verification_by,
)

__all__ = [
    "content_changes_since",
    "item_browser", "item_changes_since_previous", "item_changes_since_stage", "item_conflict", "item_detail",
    "item_facets", "item_history", "item_list", "item_revisions", "item_splits", "revision_snapshot",
    "agreement_rows", "progress_board", "verification_agreement",
    "adjudication_detail", "curation_counts", "draft_for", "lease_for", "open_adjudications", "open_send_back",
    "queue_overview", "review_by", "sent_back_items",
    "stage_configs", "verification_by",
    "belief_labels", "belief_lease_for", "belief_queues", "belief_reviews", "clue_graph_draft",
    "final_label", "judge_hidden", "provenance", "screening_suggestions", "screening_view", "shown_label",
    "belief_trust",
    "item_contents_at",
]
