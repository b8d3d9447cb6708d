"""Included by studies.api_urls under /api/studies/<slug>/prolific/."""
from django.urls import path

from studies.prolific import apis

urlpatterns = [
    path("", apis.ConnectionApi.as_view(), name="prolific_connection"),
    path("test/", apis.ConnectionTestApi.as_view(), name="prolific_test"),
    path("submissions/", apis.SubmissionListApi.as_view(), name="prolific_submissions"),
    path("submissions/<str:submission_id>/review/", apis.SubmissionReviewApi.as_view(), name="prolific_review"),
    path("bonus-batches/", apis.BonusBatchListApi.as_view(), name="prolific_bonus_batches"),
    path("bonus-batches/<int:pk>/approve/", apis.BonusBatchApproveApi.as_view(), name="prolific_bonus_approve"),
    path("bonus-batches/<int:pk>/send/", apis.BonusBatchSendApi.as_view(), name="prolific_bonus_send"),
]
