from django.urls import path

from annotation.views import belief, clue_graph, history, items, queue, researchers, review, rewrite, verification

app_name = "annotation"
urlpatterns = [
    path("items/", items.item_list_view, name="item_list"),
    path("items/<int:pk>/", items.item_detail_view, name="item_detail"),
    path("items/import/", items.item_import_view, name="item_import"),
    # curation workflow (annotators)
    path("queue/", queue.queue_view, name="queue"),
    path("queue/auto-advance/", queue.auto_advance_view, name="auto_advance"),
    path("queue/<str:stage>/next/", queue.next_item_view, name="next_item"),
    path("items/<int:pk>/<str:stage>/release/", queue.release_view, name="release"),
    path("items/<int:pk>/verify/", verification.verify_view, name="verify"),
    path("items/<int:pk>/rewrite/", rewrite.rewrite_view, name="rewrite"),
    path("items/<int:pk>/rewrite/draft/", rewrite.rewrite_draft_view, name="rewrite_draft"),
    path("items/<int:pk>/clue-graph/", clue_graph.clue_graph_view, name="clue_graph"),
    path("items/<int:pk>/clue-graph/preview/", clue_graph.clue_graph_preview_view, name="clue_graph_preview"),
    path("items/<int:pk>/clue-graph/edit/", clue_graph.clue_graph_edit_view, name="clue_graph_edit"),
    path("items/<int:pk>/review/", review.review_view, name="review"),
    path("items/<int:pk>/history/", history.history_view, name="history"),
    path("items/<int:pk>/revert/", history.revert_view, name="revert"),
    path("adjudication/", verification.adjudication_list_view, name="adjudication_list"),
    path("adjudication/<int:pk>/", verification.adjudication_view, name="adjudication"),
    # belief-label review (annotators) and judge trust (researchers)
    path("belief/", belief.belief_queue_list_view, name="belief_queues"),
    path("belief/<slug:name>/next/", belief.belief_next_view, name="belief_next"),
    path("belief/leases/<int:pk>/", belief.belief_review_view, name="belief_review"),
    path("belief/leases/<int:pk>/release/", belief.belief_release_view, name="belief_release"),
    path("belief/drafts/<int:pk>/", belief.belief_draft_view, name="belief_draft"),
    path("belief/trust/", belief.belief_trust_index_view, name="belief_trust_index"),
    path("belief/<slug:name>/trust/", belief.belief_trust_view, name="belief_trust"),
    path("belief/<slug:name>/trust/export.<str:fmt>", belief.belief_trust_export_view, name="belief_trust_export"),
    # researchers
    path("progress/", researchers.progress_view, name="progress"),
    path("agreement/", researchers.agreement_view, name="agreement"),
    path("agreement/export.<str:fmt>", researchers.agreement_export_view, name="agreement_export"),
]
