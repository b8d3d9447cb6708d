"""REST API for researchers (IsResearcher): studies, attempts and the full export of answers."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import generics, serializers
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from detectbench_web.roles import IsResearcher

from . import selectors
from .models import Attempt, Study


class StudySerializer(serializers.ModelSerializer):
    n_items = serializers.IntegerField(read_only=True)
    n_attempts = serializers.IntegerField(read_only=True)

    class Meta:
        model = Study
        fields = ["slug", "title", "status", "per_participant", "raters", "time_limit_seconds",
                  "question_time_limit_seconds", "grace_seconds", "language", "bonus_per_correct", "bonus_currency",
                  "completion_code", "completion_url", "seed", "pool_split", "pool_sample", "n_items", "n_attempts",
                  "created_at"]


class AttemptSerializer(serializers.ModelSerializer):
    n_answered = serializers.IntegerField(read_only=True)

    class Meta:
        model = Attempt
        fields = ["id", "external_participant_id", "external_study_id", "external_session_id", "status",
                  "joined_at", "started_at", "deadline", "ended_at", "n_answered"]


class StudyListApi(generics.ListAPIView):
    permission_classes = [IsResearcher]
    serializer_class = StudySerializer

    def get_queryset(self):
        return selectors.study_list()


class StudyDetailApi(generics.RetrieveAPIView):
    permission_classes = [IsResearcher]
    serializer_class = StudySerializer
    lookup_field = "slug"

    def get_queryset(self):
        return selectors.study_list()


class AttemptListApi(generics.ListAPIView):
    permission_classes = [IsResearcher]
    serializer_class = AttemptSerializer

    def get_queryset(self):
        from django.db.models import Count

        study = get_object_or_404(Study, slug=self.kwargs["slug"])
        return study.attempts.annotate(
            n_answered=Count("responses")).order_by("joined_at")


class StudyExportApi(APIView):
    """Every lease, response and refused answer of a study (same rows as the CSV/JSON export)."""

    permission_classes = [IsResearcher]

    def get(self, request, slug: str):
        study = get_object_or_404(Study, slug=slug)
        return ApiResponse({
            "study": study.slug,
            "attempts": selectors.study_attempts_export(study),
            "rows": list(selectors.study_export_rows(study)),
        })
