"""REST API for researchers (token or session auth; IsResearcher): endpoints, runs, results."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation.item_facts import QUESTION_TYPES
from annotation.models import ItemStatus
from evaluation.forms.runs import MAX_IDS, MAX_INT
from evaluation.model_calls.credentials import params_without_credentials
from evaluation.models import ModelEndpoint, OptionOrder, Result, Run, SupersededResult
from evaluation.prompting.methods import METHOD_CHOICES
from evaluation.selectors import judge as judge_selectors
from evaluation.selectors import runs as selectors
from evaluation.selectors.run_record import run_record_counts
from evaluation.services import runs as services
from evaluation.services.sweeps import launch_check
from foundation.roles import IsResearcher


class EndpointSerializer(serializers.ModelSerializer):
    table9_preset = serializers.BooleanField(write_only=True, required=False, default=False,
                                             help_text="Use the paper's Table 9 generation parameters.")
    version = serializers.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1,
        help_text="Raised by one on every change. Send the version you read with a PUT/PATCH: if the endpoint "
                  "changed since, the update is refused with 409 (edit_conflict) and nothing is saved.")

    class Meta:
        model = ModelEndpoint
        fields = ["id", "name", "kind", "base_url", "model", "api_key_env", "temperature", "top_p", "max_tokens",
                  "seed", "extra_params", "max_concurrency", "requests_per_minute", "timeout_s", "max_attempts",
                  "retry_budget_s", "price_in_per_mtok", "price_out_per_mtok", "use_cache", "created_at", "table9_preset",
                  "version"]
        read_only_fields = ["id", "created_at"]

    def to_representation(self, instance):
        """Never a credential: one stored before they were refused is not returned (evaluation.model_calls.
        credentials); a new one is refused by the model's validation."""
        data = super().to_representation(instance)
        if isinstance(instance, ModelEndpoint):
            data["base_url"] = instance.shown_base_url
            data["extra_params"] = instance.shown_extra_params
        return data


class RunSerializer(serializers.ModelSerializer):
    """A run as the API shows it; ``progress`` comes from ``selectors.with_progress`` (no query here)."""

    progress = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "endpoint", "method", "k", "split", "item_status", "question_type", "limit", "seed", "samples",
                  "option_order", "option_labels", "prompt_version", "params", "status", "created_at", "started_at",
                  "finished_at", "progress"]
        read_only_fields = fields

    def get_progress(self, run: Run) -> dict:
        p = run.progress
        return {"total": p.total, "done": p.done, "errors": p.errors}

    def to_representation(self, instance):
        """The generation parameters without a credential (a run launched before they were refused)."""
        data = super().to_representation(instance)
        if "params" in data:
            data["params"] = params_without_credentials(data["params"])
        return data


@extend_schema_field(OpenApiTypes.STR)
class ItemStatusField(serializers.ChoiceField):
    """Item.status's choices; a plain string in the schema, whose ItemStatus enum is Item.status's by name."""


class SelectionSerializer(serializers.Serializer):
    """The item selection and sampling of a launch (one run, or a sweep of several)."""

    METHODS = METHOD_CHOICES
    split = serializers.CharField(required=False, allow_blank=True, default="", max_length=40)
    item_status = ItemStatusField(choices=ItemStatus.choices, required=False, allow_blank=True, default="",
                                  help_text="Only items in this status: " + ", ".join(ItemStatus.values)
                                  + " (empty: any)")
    question_type = serializers.ChoiceField(choices=QUESTION_TYPES, required=False, allow_blank=True, default="")
    ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_INT), required=False,
                                default=list, max_length=MAX_IDS)
    limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_INT, default=None)
    seed = serializers.IntegerField(required=False, default=42, min_value=0, max_value=MAX_INT)
    samples = serializers.IntegerField(required=False, default=1, min_value=1, max_value=50)
    k = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=50, default=None)
    option_order = serializers.ChoiceField(choices=OptionOrder.choices, default=OptionOrder.ORIGINAL)
    chunk_size = serializers.IntegerField(required=False, default=400, min_value=1, max_value=10_000)


class PreflightFlagSerializer(serializers.Serializer):
    no_preflight = serializers.BooleanField(
        required=False, default=False,
        help_text="Launch without checking the endpoints first (by default each remote endpoint is asked "
                  "GET /models, or one tiny completion, and a launch on one that cannot serve is refused)")


class RunLaunchSerializer(PreflightFlagSerializer, SelectionSerializer):
    endpoint = serializers.PrimaryKeyRelatedField(queryset=ModelEndpoint.objects.all())
    method = serializers.ChoiceField(choices=METHOD_CHOICES)


class RunLaunchedSerializer(RunSerializer):
    preflight_warnings = serializers.ListField(child=serializers.CharField(), read_only=True,
                                               help_text="What the endpoint check warned of (e.g. a key variable not set)")

    class Meta(RunSerializer.Meta):
        fields = RunSerializer.Meta.fields + ["preflight_warnings"]
        read_only_fields = fields


class ResultSerializer(serializers.ModelSerializer):
    """A result row with the content version it was asked at, the item's version now and whether it is stale
    (annotated by ``selectors.result_list``: no query per row)."""

    current_version = serializers.IntegerField(read_only=True,
                                               help_text="The item's content version now (Item.content_version)")
    stale = serializers.BooleanField(read_only=True, help_text="The item's content changed since the row was asked "
                                                               "(item_version differs from current_version): left "
                                                               "out of the leaderboard and of comparisons")

    class Meta:
        model = Result
        fields = ["id", "item", "item_version", "current_version", "stale", "sample_index", "messages", "raw_output", "shown_order", "answer_index", "answer_label",
                  "parse_status", "is_correct", "answer_first", "free_answer", "key_information", "keyinfo",
                  "tokens_in", "tokens_out", "latency_s", "attempts", "cached", "error", "updated_at"]


class SupersededResultSerializer(serializers.ModelSerializer):
    """A row a refresh took out of the run (``services.run_refresh``), kept whole (annotated by
    ``selectors.superseded_list``: no query per row)."""

    external_id = serializers.CharField(read_only=True)
    current_version = serializers.IntegerField(read_only=True,
                                               help_text="The item's content version now (Item.content_version)")
    superseded_by = serializers.CharField(source="superseded_by_name", read_only=True, allow_null=True,
                                          help_text="Who refreshed (a username; null: the command line, or a "
                                                    "deleted account)")
    row = serializers.JSONField(read_only=True, help_text="Every field of the old row as it was (its id is "
                                                          "result_id; judge labels name it result:<id>)")

    class Meta:
        model = SupersededResult
        fields = ["id", "result_id", "item", "external_id", "sample_index", "item_version", "current_version",
                  "is_correct", "superseded_at", "superseded_by", "row"]
        read_only_fields = fields


class EndpointListApi(generics.ListCreateAPIView):
    """GET: the endpoints; POST: create one (through ``services.endpoint_create``)."""

    permission_classes = [IsResearcher]
    serializer_class = EndpointSerializer

    def get_queryset(self):
        return selectors.endpoint_list()

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("version", None)
        serializer.instance = services.endpoint_create(**data)


_ENDPOINT_UPDATE_RESPONSES = {
    200: EndpointSerializer,
    400: OpenApiResponse(description="invalid fields (e.g. a key pasted where the variable's name belongs)"),
    409: OpenApiResponse(description="edit_conflict: the endpoint changed since the version sent; nothing saved"),
}


@extend_schema_view(put=extend_schema(responses=_ENDPOINT_UPDATE_RESPONSES),
                    patch=extend_schema(responses=_ENDPOINT_UPDATE_RESPONSES))
class EndpointDetailApi(generics.RetrieveUpdateAPIView):
    """GET: one endpoint; PUT / PATCH: change it (through ``services.endpoint_update``, validated as on
    creation: the key is only ever the name of an environment variable)."""

    permission_classes = [IsResearcher]
    serializer_class = EndpointSerializer

    def get_queryset(self):
        return selectors.endpoint_list()

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        expected = data.pop("version", None)
        serializer.instance = services.endpoint_update(endpoint=serializer.instance, expected_version=expected, **data)


class RunListApi(generics.ListAPIView):
    """GET: runs newest first, with progress; POST: launch one (``services.run_launch``)."""

    permission_classes = [IsResearcher]
    serializer_class = RunSerializer

    def get_queryset(self):
        return selectors.run_queryset()

    def paginate_queryset(self, queryset):
        return selectors.with_progress(list(super().paginate_queryset(queryset)))

    @extend_schema(request=RunLaunchSerializer, responses={
        201: RunLaunchedSerializer,
        400: OpenApiResponse(description="invalid fields, no items match, a method needs demonstrations, or the "
                                         "endpoint check refused the endpoint (code endpoint_unusable)")})
    def post(self, request):
        launch = RunLaunchSerializer(data=request.data)
        launch.is_valid(raise_exception=True)
        args = dict(launch.validated_data)
        check = not args.pop("no_preflight")
        selection = {k: v for k, v in args.items() if k not in ("endpoint", "method")}
        _, warnings = launch_check(endpoints=[args["endpoint"]], methods=[args["method"]], check=check,
                                   endpoint_field="endpoint", method_field="method", **selection)
        run = services.run_launch(user=request.user, **args)
        return Response({**_OneRun.run_data(run), "preflight_warnings": warnings}, status=status.HTTP_201_CREATED)


class _OneRun(generics.GenericAPIView):
    permission_classes = [IsResearcher]
    serializer_class = RunSerializer
    queryset = Run.objects.select_related("endpoint")

    @staticmethod
    def run_data(run: Run) -> dict:
        return RunSerializer(selectors.with_progress([run])[0]).data

    def respond(self, run: Run) -> Response:
        return Response(self.run_data(run))


class RunDetailApi(_OneRun):
    """A run with its metrics and its metrics per question type."""

    def get(self, request, pk: int):
        run = self.get_object()
        summary, types = selectors.run_summary_and_question_types(run=run)
        data = self.run_data(run)
        data["metrics"] = summary.as_json()
        data["by_question_type"] = {k: v.as_dict() for k, v in types.items()}
        data["judged_accuracy"] = [a.as_json() for a in judge_selectors.free_text_accuracy(run=run)]
        data["record"] = run_record_counts(run=run)
        return Response(data)


class RunCancelApi(_OneRun):
    @extend_schema(request=None, responses={200: RunSerializer})
    def post(self, request, pk: int):
        return self.respond(services.run_cancel(run=self.get_object()))


class RunResumeApi(_OneRun):
    @extend_schema(request=None, responses={200: RunSerializer})
    def post(self, request, pk: int):
        return self.respond(services.run_resume(run=self.get_object()))


class RunRefreshApi(_OneRun):
    """Ask a finished run's stale rows again (``services.run_refresh``): the old rows are kept as superseded rows
    and the run resumes over their items at the items' current content."""

    @extend_schema(request=None, responses={
        200: RunSerializer, 404: OpenApiResponse(description="no such run"),
        409: OpenApiResponse(description="run_active: the run is still running (refresh it once it has finished)")})
    def post(self, request, pk: int):
        run, _ = services.run_refresh(run=self.get_object(), user=request.user)
        return self.respond(run)


class RunResultsApi(generics.ListAPIView):
    """The rows of one run, paginated."""

    permission_classes = [IsResearcher]
    serializer_class = ResultSerializer

    def get_queryset(self):
        return selectors.result_list(run=get_object_or_404(Run.objects.only("pk"), pk=self.kwargs["pk"]))


class RunSupersededApi(generics.ListAPIView):
    """The rows refreshes took out of one run, kept whole; each (item, sample)'s oldest first, paginated."""

    permission_classes = [IsResearcher]
    serializer_class = SupersededResultSerializer

    def get_queryset(self):
        return selectors.superseded_list(run=get_object_or_404(Run.objects.only("pk"), pk=self.kwargs["pk"]))
