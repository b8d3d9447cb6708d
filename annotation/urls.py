from django.urls import path

from . import views

app_name = "annotation"
urlpatterns = [
    path("items/", views.item_list_view, name="item_list"),
    path("items/<int:pk>/", views.item_detail_view, name="item_detail"),
    path("items/import/", views.item_import_view, name="item_import"),
    # curation workflow (annotators)
    path("queue/", views.queue_view, name="queue"),
    path("queue/<str:stage>/next/", views.next_item_view, name="next_item"),
    path("items/<int:pk>/<str:stage>/release/", views.release_view, name="release"),
    path("items/<int:pk>/verify/", views.verify_view, name="verify"),
    path("items/<int:pk>/rewrite/", views.rewrite_view, name="rewrite"),
    path("items/<int:pk>/rewrite/draft/", views.rewrite_draft_view, name="rewrite_draft"),
    path("items/<int:pk>/clue-graph/", views.clue_graph_view, name="clue_graph"),
    path("items/<int:pk>/clue-graph/preview/", views.clue_graph_preview_view, name="clue_graph_preview"),
    path("items/<int:pk>/clue-graph/edit/", views.clue_graph_edit_view, name="clue_graph_edit"),
    path("items/<int:pk>/review/", views.review_view, name="review"),
    path("items/<int:pk>/history/", views.history_view, name="history"),
    path("items/<int:pk>/revert/", views.revert_view, name="revert"),
    path("adjudication/", views.adjudication_list_view, name="adjudication_list"),
    path("adjudication/<int:pk>/", views.adjudication_view, name="adjudication"),
    # researchers
    path("progress/", views.progress_view, name="progress"),
    path("agreement/", views.agreement_view, name="agreement"),
    path("agreement/export.<str:fmt>", views.agreement_export_view, name="agreement_export"),
]
