"""Researchers' Prolific API (IsResearcher), under /api/studies/<slug>/prolific/: the connection and its test,
submissions (approve, reject), bonus batches (propose, approve, send). Thin: a serializer validates, one service
or selector answers; refusals become JSON through the project's DRF exception handler."""
from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response as ApiResponse

from foundation.roles import IsResearcher
from studies.models import Study
from studies.prolific import selectors, services
from studies.prolific.models import BonusBatch, ProlificConnection, ProlificSubmission
from studies.tasks import send_bonus_batch


class ConnectionSerializer(serializers.ModelSerializer):
    class Meta:
        model = ProlificConnection
        fields = ["prolific_study_id", "token_env", "prolific_status", "places", "checked_at", "check_message"]
        read_only_fields = ["prolific_status", "places", "checked_at", "check_message"]
        extra_kwargs = {"prolific_study_id": {"validators": []}}  # the service says who has it


class SubmissionSerializer(serializers.ModelSerializer):
    attempt_status = serializers.CharField(source="attempt.status", default=None, read_only=True)

    class Meta:
        model = ProlificSubmission
        fields = ["submission_id", "participant_id", "status", "status_at", "attempt", "attempt_status",
                  "review_message", "reviewed_at"]


class ReviewSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["approve", "reject"])
    message = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)
    category = serializers.CharField(required=False, allow_blank=True, default="", max_length=40)


class BonusBatchSerializer(serializers.ModelSerializer):
    n_payments = serializers.IntegerField(read_only=True, default=None)

    class Meta:
        model = BonusBatch
        fields = ["id", "key", "state", "currency", "total", "n_payments", "prolific_bulk_id", "created_at",
                  "approved_at", "sent_at", "send_attempts", "reconciled", "last_error"]


class _StudyApi(GenericAPIView):
    permission_classes = [IsResearcher]

    def study(self) -> Study:
        return get_object_or_404(Study, slug=self.kwargs["slug"])

    def get_object(self) -> Study:
        """The study the URL names (DRF's OPTIONS asks for the object behind a PUT or POST; it is never a 500)."""
        return self.study()


class ConnectionApi(_StudyApi):
    serializer_class = ConnectionSerializer

    def get(self, request, slug: str):
        connection = selectors.connection_for(study_id=self.study().pk)
        if connection is None:
            return ApiResponse({"code": "prolific_not_connected", "detail": "No Prolific connection."}, status=404)
        return ApiResponse({**ConnectionSerializer(connection).data,
                            "submissions": selectors.submission_counts(study_id=connection.study_id)})

    def put(self, request, slug: str):
        serializer = ConnectionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        connection = services.connection_set(study_id=self.study().pk, **serializer.validated_data)
        return ApiResponse(ConnectionSerializer(connection).data)


class ConnectionTestApi(_StudyApi):
    serializer_class = ConnectionSerializer

    def post(self, request, slug: str):
        return ApiResponse(ConnectionSerializer(services.connection_test(study_id=self.study().pk)).data)


class SubmissionListApi(_StudyApi):
    serializer_class = SubmissionSerializer

    def get(self, request, slug: str):
        return ApiResponse(SubmissionSerializer(selectors.submission_list(study_id=self.study().pk), many=True).data)


class SubmissionReviewApi(_StudyApi):
    serializer_class = ReviewSerializer

    def post(self, request, slug: str, submission_id: str):
        serializer = ReviewSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, study_id = serializer.validated_data, self.study().pk
        if data["action"] == "approve":
            submission = services.submission_approve(study_id=study_id, submission_id=submission_id,
                                                     user=request.user)
        else:
            submission = services.submission_reject(study_id=study_id, submission_id=submission_id,
                                                    message=data["message"], category=data["category"],
                                                    user=request.user)
        return ApiResponse(SubmissionSerializer(submission).data)


class BonusBatchListApi(_StudyApi):
    serializer_class = BonusBatchSerializer

    def get(self, request, slug: str):
        return ApiResponse(BonusBatchSerializer(selectors.bonus_batch_list(study_id=self.study().pk), many=True).data)

    def post(self, request, slug: str):
        """Propose a batch of every bonus not yet in one (204 when there is nothing to pay)."""
        batch = services.bonus_batch_propose(study_id=self.study().pk, user=request.user)
        if batch is None:
            return ApiResponse(status=status.HTTP_204_NO_CONTENT)
        return ApiResponse(BonusBatchSerializer(batch).data, status=status.HTTP_201_CREATED)


class BonusBatchApproveApi(_StudyApi):
    serializer_class = BonusBatchSerializer

    def post(self, request, slug: str, pk: int):
        batch = get_object_or_404(BonusBatch, pk=pk, study=self.study())
        return ApiResponse(BonusBatchSerializer(services.bonus_batch_approve(batch_id=batch.pk, user=request.user)).data)


class BonusBatchSendApi(_StudyApi):
    """Send an approved batch (or finish one left sending or failed) through the worker: 202, then the batch's
    state tells the outcome. Reconciled with Prolific before paying, never paid twice; a batch that may not be sent
    is refused at once (409)."""

    serializer_class = BonusBatchSerializer

    @extend_schema(request=None, responses={202: BonusBatchSerializer})
    def post(self, request, slug: str, pk: int):
        batch = get_object_or_404(BonusBatch, pk=pk, study=self.study())
        batch = services.bonus_batch_check_sendable(batch_id=batch.pk)
        transaction.on_commit(lambda: send_bonus_batch.delay(batch.pk))
        return ApiResponse(BonusBatchSerializer(batch).data, status=status.HTTP_202_ACCEPTED)
