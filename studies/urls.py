from django.urls import path

from studies.prolific import pages as prolific_pages
from studies.prolific import views as prolific_views
from studies.views import preview
from studies.views import researchers as views

app_name = "studies"
urlpatterns = [
    path("", views.study_list_view, name="study_list"),
    path("prolific/webhook/", prolific_views.webhook_view, name="prolific_webhook"),
    path("new/", views.study_create_view, name="study_create"),
    path("<slug:slug>/", views.study_monitor_view, name="study_monitor"),
    path("<slug:slug>/edit/", views.study_edit_view, name="study_edit"),
    path("<slug:slug>/exclude-untranslated/", views.study_exclude_untranslated_view, name="exclude_untranslated"),
    path("<slug:slug>/reask/", views.study_reask_view, name="study_reask"),
    path("<slug:slug>/results/", views.study_results_view, name="study_results"),
    # A researcher walks the study as a participant; it is kept in the session only (studies/views/preview.py).
    path("<slug:slug>/preview/", preview.study_preview_view, name="study_preview"),
    path("<slug:slug>/preview/answer/", preview.study_preview_answer_view, name="study_preview_answer"),
    path("<slug:slug>/preview/draft/", preview.study_preview_draft_view, name="study_preview_draft"),
    path("<slug:slug>/preview/practice/", preview.study_preview_practice_view, name="study_preview_practice"),
    path("<slug:slug>/preview/end/<str:kind>/", preview.study_preview_end_view, name="study_preview_end"),
    path("<slug:slug>/preview/<str:step>/", preview.study_preview_step_view, name="study_preview_step"),
    path("<slug:slug>/export.<str:fmt>", views.study_export_view, name="study_export"),
    path("<slug:slug>/prolific/", prolific_pages.prolific_view, name="prolific"),
    path("<slug:slug>/prolific/test/", prolific_pages.prolific_test_view, name="prolific_test"),
    path("<slug:slug>/prolific/submissions/<str:submission_id>/review/", prolific_pages.prolific_review_view,
         name="prolific_review"),
    path("<slug:slug>/prolific/bonus/propose/", prolific_pages.prolific_bonus_view, {"action": "propose"},
         name="prolific_bonus_propose"),
    path("<slug:slug>/prolific/bonus/<int:pk>/approve/", prolific_pages.prolific_bonus_view, {"action": "approve"},
         name="prolific_bonus_approve"),
    path("<slug:slug>/prolific/bonus/<int:pk>/send/", prolific_pages.prolific_bonus_view, {"action": "send"},
         name="prolific_bonus_send"),
    path("<slug:slug>/attempts/<int:attempt_id>/extend/", views.attempt_extend_view, name="attempt_extend"),
    path("<slug:slug>/attempts/<int:attempt_id>/expire/", views.attempt_expire_view, name="attempt_expire"),
]
