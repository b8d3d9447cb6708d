"""REST API for researchers (token or session auth; IsResearcher): endpoints, runs, results."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation.item_facts import QUESTION_TYPES
from annotation.models import ItemStatus
from detectbench_web.roles import IsResearcher

from . import selectors, services
from .forms import MAX_IDS, MAX_INT
from .methods import METHOD_CHOICES
from .models import ModelEndpoint, OptionOrder, Result, Run


class EndpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelEndpoint
        fields = ["id", "name", "kind", "base_url", "model", "api_key_env", "temperature", "top_p", "max_tokens",
                  "seed", "extra_params", "max_concurrency", "requests_per_minute", "timeout_s", "max_attempts",
                  "retry_budget_s", "price_in_per_mtok", "price_out_per_mtok", "use_cache", "created_at"]
        read_only_fields = ["id", "created_at"]


class RunSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "endpoint", "method", "k", "split", "item_status", "question_type", "limit", "seed", "samples",
                  "option_order", "option_labels", "prompt_version", "params", "status", "created_at", "started_at",
                  "finished_at", "progress"]
        read_only_fields = fields

    def get_progress(self, run: Run) -> dict:
        p = self.context.get("progress", {}).get(run.pk) or selectors.run_progress(run=run)
        return {"total": p.total, "done": p.done, "errors": p.errors}


class RunLaunchSerializer(serializers.Serializer):
    endpoint = serializers.PrimaryKeyRelatedField(queryset=ModelEndpoint.objects.all())
    method = serializers.ChoiceField(choices=METHOD_CHOICES)
    split = serializers.CharField(required=False, allow_blank=True, default="", max_length=40)
    item_status = serializers.ChoiceField(choices=ItemStatus.choices, required=False, allow_blank=True, default="")
    question_type = serializers.ChoiceField(choices=QUESTION_TYPES, required=False, allow_blank=True, default="")
    ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_INT), required=False,
                                default=list, max_length=MAX_IDS)
    limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_INT, default=None)
    seed = serializers.IntegerField(required=False, default=42, min_value=0, max_value=MAX_INT)
    samples = serializers.IntegerField(required=False, default=1, min_value=1, max_value=50)
    k = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=50, default=None)
    option_order = serializers.ChoiceField(choices=OptionOrder.choices, default=OptionOrder.ORIGINAL)
    chunk_size = serializers.IntegerField(required=False, default=400, min_value=1, max_value=10_000)


class ResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = Result
        fields = ["id", "item", "sample_index", "messages", "raw_output", "shown_order", "answer_index", "answer_label",
                  "parse_status", "is_correct", "answer_first", "free_answer", "key_information", "keyinfo",
                  "tokens_in", "tokens_out", "latency_s", "attempts", "cached", "error", "updated_at"]


class EndpointViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                      viewsets.GenericViewSet):
    permission_classes = [IsResearcher]
    serializer_class = EndpointSerializer
    queryset = ModelEndpoint.objects.order_by("name")

    def perform_create(self, serializer):
        serializer.instance = services.endpoint_create(**serializer.validated_data)


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = [IsResearcher]
    serializer_class = RunSerializer
    queryset = Run.objects.select_related("endpoint").order_by("-created_at")

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        progress = selectors.run_progress_many(run_ids=[r.pk for r in page])
        data = RunSerializer(page, many=True, context={"progress": progress}).data
        return self.get_paginated_response(data)

    def retrieve(self, request, *args, **kwargs):
        run = self.get_object()
        data = RunSerializer(run).data
        summary, types = selectors.run_summary_and_question_types(run=run)
        data["metrics"] = summary.as_json()
        data["by_question_type"] = {k: v.as_dict() for k, v in types.items()}
        return Response(data)

    def create(self, request, *args, **kwargs):
        launch = RunLaunchSerializer(data=request.data)
        launch.is_valid(raise_exception=True)
        run = services.run_launch(user=request.user, **launch.validated_data)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        return Response(RunSerializer(services.run_cancel(run=self.get_object())).data)

    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return Response(RunSerializer(services.run_resume(run=self.get_object())).data)

    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        run = get_object_or_404(Run, pk=pk)
        results = Result.objects.filter(run=run).order_by("item_id", "sample_index")
        page = self.paginate_queryset(results)
        return self.get_paginated_response(ResultSerializer(page, many=True).data)
