"""REST API for researchers (IsResearcher): studies, their setup, attempts and the full export of answers.

Serializers validate; each view calls one service or selector. Refused calls (`studies.errors`)
become JSON with their status through the project's DRF exception handler.
"""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response as ApiResponse

from foundation.roles import IsResearcher
from studies import services
from studies.forms import RESERVED_SLUGS, SETTING_FIELDS
from studies.models import Attempt, Study
from studies.selectors.exports import study_attempts_export, study_export_rows
from studies.selectors.monitor import attempt_list, study_list

STUDY_FIELDS = ["slug", "title", "status", "per_participant", "raters", "time_limit_seconds",
                "question_time_limit_seconds", "grace_seconds", "language", "extra_languages", "bonus_per_correct",
                "bonus_currency", "completion_code", "completion_url", "timeout_completion_code",
                "timeout_instruction", "seed", "pool_split", "pool_sample", "pool_include_rejected",
                "screening_question", "screening_options", "screening_pass", "screen_out_code"]


class StudySerializer(serializers.ModelSerializer):
    n_items = serializers.IntegerField(read_only=True)
    n_attempts = serializers.IntegerField(read_only=True)

    class Meta:
        model = Study
        fields = [*STUDY_FIELDS, "n_items", "n_attempts", "created_at"]


class StudySetupSerializer(serializers.ModelSerializer):
    """A new study or changed settings; `pool_items` (external or database ids) overrides the seeded sample."""

    pool_items = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                       max_length=10_000, default=list)

    class Meta:
        model = Study
        fields = [*STUDY_FIELDS, "consent_text", "instructions", "practice_item", "pool_items"]

    def validate_slug(self, slug: str) -> str:
        if slug in RESERVED_SLUGS:
            raise serializers.ValidationError(gettext("This slug is reserved."))
        return slug


class AttemptSerializer(serializers.ModelSerializer):
    n_answered = serializers.IntegerField(read_only=True)

    class Meta:
        model = Attempt
        fields = ["id", "external_participant_id", "external_study_id", "external_session_id", "status",
                  "joined_at", "started_at", "deadline", "ended_at", "n_answered", "screening_answer",
                  "screened_out_reason", "prolific_report", "prolific_reported_at"]


class ExtendSerializer(serializers.Serializer):
    minutes = serializers.IntegerField(min_value=1, max_value=24 * 60)


class StudyExportSerializer(serializers.Serializer):
    study = serializers.CharField()
    attempts = serializers.ListField(child=serializers.DictField())
    rows = serializers.ListField(child=serializers.DictField())


def _settings(data: dict) -> dict:
    return {name: value for name, value in data.items() if name in SETTING_FIELDS}


class StudyListApi(generics.ListCreateAPIView):
    """GET: every study; POST: create one (its pool: `pool_items`, else the seeded sample of `pool_split`)."""

    permission_classes = [IsResearcher]

    def get_serializer_class(self):
        return StudySetupSerializer if self.request.method == "POST" else StudySerializer

    def get_queryset(self):
        return study_list()

    @extend_schema(tags=["studies"], request=StudySetupSerializer, responses={201: StudySerializer})
    def post(self, request, *args, **kwargs):
        return self.create(request, *args, **kwargs)

    def create(self, request, *args, **kwargs):
        setup = self.get_serializer(data=request.data)
        setup.is_valid(raise_exception=True)
        data = setup.validated_data
        study = services.study_create(slug=data["slug"], pool_items=data.get("pool_items"), user=request.user,
                                      **_settings(data))
        return ApiResponse(StudySerializer(study_list().get(pk=study.pk)).data,
                           status=status.HTTP_201_CREATED)


class StudyDetailApi(generics.RetrieveUpdateAPIView):
    """GET: one study; PATCH: change its settings (the pool only before anyone started)."""

    permission_classes = [IsResearcher]
    lookup_field = "slug"
    http_method_names = ["get", "patch", "head", "options"]

    def get_serializer_class(self):
        return StudySetupSerializer if self.request.method == "PATCH" else StudySerializer

    def get_queryset(self):
        return study_list()

    @extend_schema(tags=["studies"], request=StudySetupSerializer, responses=StudySerializer)
    def patch(self, request, *args, **kwargs):
        return self.partial_update(request, *args, **kwargs)

    def update(self, request, *args, **kwargs):
        study = self.get_object()
        setup = self.get_serializer(study, data=request.data, partial=True)
        setup.is_valid(raise_exception=True)
        data = setup.validated_data
        data.pop("slug", None)  # the slug names the study: it does not change
        services.study_update(study_id=study.pk, pool_items=data.get("pool_items"), **_settings(data))
        return ApiResponse(StudySerializer(self.get_queryset().get(pk=study.pk)).data)


class AttemptListApi(generics.ListAPIView):
    permission_classes = [IsResearcher]
    serializer_class = AttemptSerializer

    def get_queryset(self):
        return attempt_list(study=get_object_or_404(Study, slug=self.kwargs["slug"]))


class _AttemptActionApi(generics.GenericAPIView):
    """POST on one attempt of a study; answers the attempt as it is afterwards."""

    permission_classes = [IsResearcher]
    serializer_class = AttemptSerializer

    def get_queryset(self):
        return attempt_list(study=get_object_or_404(Study, slug=self.kwargs["slug"]))

    def _answer(self, attempt_id: int) -> ApiResponse:
        return ApiResponse(AttemptSerializer(self.get_queryset().get(pk=attempt_id)).data)


class AttemptExtendApi(_AttemptActionApi):
    """Move a running attempt's deadline by `minutes`."""

    @extend_schema(tags=["studies"], request=ExtendSerializer, responses=AttemptSerializer)
    def post(self, request, slug: str, pk: int):
        attempt = self.get_object()
        extend = ExtendSerializer(data=request.data)
        extend.is_valid(raise_exception=True)
        services.attempt_extend(attempt_id=attempt.pk, seconds=extend.validated_data["minutes"] * 60)
        return self._answer(attempt.pk)


class AttemptExpireApi(_AttemptActionApi):
    """Close a running attempt now; its unanswered items go back to the pool (idempotent)."""

    @extend_schema(tags=["studies"], request=None, responses=AttemptSerializer)
    def post(self, request, slug: str, pk: int):
        attempt = self.get_object()
        services.attempt_expire(attempt_id=attempt.pk)
        return self._answer(attempt.pk)


class ReaskedSerializer(serializers.Serializer):
    items = serializers.IntegerField(help_text="Items whose places were given back: asked again at their current "
                                               "content, first.")
    answers = serializers.IntegerField(help_text="Answers on an earlier content that gave their places back (kept "
                                                 "and exported, counted apart).")
    taken_back = serializers.IntegerField(help_text="Given-back answers current again (an edit undone) that took "
                                                    "places back.")


class StudyReaskApi(generics.GenericAPIView):
    """Ask the items edited mid-study again at their current content: the answers given on an earlier content give
    their places in the items' quotas back (they stay on record, counted apart), so that each item ends with the
    study's raters on the content it has now (studies.services.reasking). Idempotent."""

    permission_classes = [IsResearcher]
    serializer_class = ReaskedSerializer

    @extend_schema(tags=["studies"], request=None, responses=ReaskedSerializer)
    def post(self, request, slug: str):
        study = get_object_or_404(Study, slug=slug)
        done = services.study_reask_changed_items(study_id=study.pk)
        return ApiResponse({"items": done.items, "answers": done.answers, "taken_back": done.taken_back})


class StudyExportApi(generics.GenericAPIView):
    """Every lease, response and refused answer of a study (same rows as the CSV/JSON export)."""

    permission_classes = [IsResearcher]
    serializer_class = StudyExportSerializer
    lookup_field = "slug"
    queryset = Study.objects.all()

    def get(self, request, slug: str):
        study = self.get_object()
        return ApiResponse({
            "study": study.slug,
            "attempts": study_attempts_export(study),
            "rows": list(study_export_rows(study)),
        })
