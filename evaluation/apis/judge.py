"""REST API of the judge for researchers (IsResearcher): judge configurations, judge runs, launching one.

Labels and their reviews are annotation's API (the review side)."""
from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation.models import LabelTask, ReviewOrder
from evaluation.models import ModelEndpoint, Run
from evaluation.models.judge import BeliefSource, JudgeConfig, JudgeRun, ProbeKind
from evaluation.selectors import judge as selectors
from evaluation.selectors import judge_quality as quality_selectors
from evaluation.services import judge as services
from foundation.errors import NotFound
from foundation.numerals import number_or_none
from foundation.roles import IsResearcher

MAX_INT = 2_147_483_647


class JudgeConfigSerializer(serializers.ModelSerializer):
    endpoint_name = serializers.CharField(source="endpoint.name", default=None, read_only=True)
    queue = serializers.CharField(source="queue.name", read_only=True)
    review_order = serializers.CharField(source="queue.order", read_only=True)
    random_share = serializers.FloatField(source="queue.random_share", read_only=True)
    reviewers_per_label = serializers.IntegerField(source="queue.reviewers_per_label", read_only=True)
    blind = serializers.BooleanField(source="queue.blind", read_only=True)
    accept_threshold = serializers.FloatField(source="queue.accept_threshold", read_only=True)
    run_count = serializers.IntegerField(read_only=True, default=0)

    class Meta:
        model = JudgeConfig
        fields = ["id", "name", "description", "endpoint", "endpoint_name", "task", "belief_source", "template",
                  "samples", "temperature", "queue", "review_order", "random_share", "reviewers_per_label", "blind",
                  "accept_threshold", "run_count", "created_at"]
        read_only_fields = fields


class JudgeConfigCreateSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=64)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    endpoint = serializers.PrimaryKeyRelatedField(queryset=ModelEndpoint.objects.all(), required=False,
                                                  allow_null=True, default=None)
    task = serializers.ChoiceField(choices=LabelTask.choices, required=False, allow_blank=True, default="")
    belief_source = serializers.ChoiceField(choices=BeliefSource.choices)
    template = serializers.CharField(required=False, allow_blank=True, default="", max_length=64)
    samples = serializers.IntegerField(required=False, default=1, min_value=1, max_value=50)
    temperature = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0, max_value=2)
    # The review policy of its queue (annotation's defaults when left out).
    order = serializers.ChoiceField(choices=ReviewOrder.choices, required=False)
    random_share = serializers.FloatField(required=False, min_value=0, max_value=1)
    reviewers_per_label = serializers.IntegerField(required=False, min_value=1, max_value=20)
    blind = serializers.BooleanField(required=False)
    accept_threshold = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)


class JudgeRunSerializer(serializers.ModelSerializer):
    config = serializers.CharField(source="config.name", read_only=True)
    probe = serializers.CharField(read_only=True, help_text='A position probe: "reversed" or "rotated" (its labels '
                                  'are not in the review queue); empty for a judge run.')

    class Meta:
        model = JudgeRun
        fields = ["id", "config", "task", "target_run", "split", "limit", "status", "n", "scored", "unscored",
                  "errors", "label_counts", "mean_belief", "wall_s", "last_error", "note", "probe", "created_at",
                  "started_at", "finished_at"]
        read_only_fields = fields


class JudgeRunLaunchSerializer(serializers.Serializer):
    config = serializers.SlugField(max_length=64, help_text='A judge configuration ("builtin": the offline judge).')
    task = serializers.ChoiceField(choices=LabelTask.choices, required=False, allow_blank=True, default="")
    run = serializers.PrimaryKeyRelatedField(queryset=Run.objects.all(), required=False, allow_null=True, default=None,
                                             help_text="The free-text run whose answers are judged.")
    split = serializers.CharField(required=False, allow_blank=True, default="", max_length=40)
    limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_INT, default=None)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


@extend_schema_view(post=extend_schema(request=JudgeConfigCreateSerializer, responses={201: JudgeConfigSerializer}))
class JudgeConfigListApi(generics.ListCreateAPIView):
    """GET: the judge configurations with their review policy; POST: create one (and its review queue)."""

    permission_classes = [IsResearcher]
    serializer_class = JudgeConfigSerializer

    def get_queryset(self):
        return selectors.judge_config_list()

    def create(self, request, *args, **kwargs):
        given = JudgeConfigCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        config = services.judge_config_create(user=request.user, **given.validated_data)
        return Response(JudgeConfigSerializer(config).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(parameters=[OpenApiParameter("config", str, description="A judge configuration's name"),
                                  OpenApiParameter("task", str, description="The judge's task"),
                                  OpenApiParameter("run", int, description="The model run judged")]),
    post=extend_schema(request=JudgeRunLaunchSerializer, responses={201: JudgeRunSerializer}))
class JudgeRunListApi(generics.ListCreateAPIView):
    """GET: judge runs newest first (?config=, ?task=, ?run=); POST: launch one on Celery."""

    permission_classes = [IsResearcher]
    serializer_class = JudgeRunSerializer

    def get_queryset(self):
        params = self.request.query_params
        run = params.get("run", "")
        return selectors.judge_run_list(config=params.get("config", ""), task=params.get("task", ""),
                                        target_run=number_or_none(run, most_digits=18))

    def create(self, request, *args, **kwargs):
        given = JudgeRunLaunchSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = dict(given.validated_data)
        config = services.judge_config_get(name=data.pop("config"))
        judge_run = services.judge_run_launch(config=config, user=request.user, **data)
        return Response(JudgeRunSerializer(judge_run).data, status=status.HTTP_201_CREATED)


class _OneJudgeRun(generics.GenericAPIView):
    permission_classes = [IsResearcher]
    serializer_class = JudgeRunSerializer

    def get_queryset(self):
        return selectors.judge_run_list()

    def respond(self, judge_run: JudgeRun) -> Response:
        return Response(JudgeRunSerializer(judge_run).data)


class JudgeRunDetailApi(_OneJudgeRun, generics.RetrieveAPIView):
    """One judge run with its counts."""


class JudgeRunCancelApi(_OneJudgeRun):
    @extend_schema(request=None, responses={200: JudgeRunSerializer})
    def post(self, request, pk: int):
        return self.respond(services.judge_run_cancel(judge_run=self.get_object()))


class JudgeRunResumeApi(_OneJudgeRun):
    """Queue the judge run again: only targets without a label are computed."""

    @extend_schema(request=None, responses={200: JudgeRunSerializer})
    def post(self, request, pk: int):
        return self.respond(services.judge_run_resume(judge_run=self.get_object()))


class JudgeProbeLaunchSerializer(serializers.Serializer):
    judge_run = serializers.IntegerField(min_value=1, max_value=MAX_INT,
                                         help_text="The configuration's judge run whose targets are sampled.")
    permutation = serializers.ChoiceField(choices=ProbeKind.choices, default=ProbeKind.REVERSED,
                                          help_text="How the options are shown to the judge again.")
    sample = serializers.IntegerField(min_value=1, max_value=10_000, default=services.PROBE_SAMPLE)
    seed = serializers.IntegerField(min_value=0, max_value=MAX_INT, default=0)


class JudgeQualitySerializer(serializers.Serializer):
    config = serializers.CharField()
    task = serializers.CharField()
    belief_source = serializers.CharField()
    n_labels = serializers.IntegerField()
    n_scored = serializers.IntegerField()
    n_reviews = serializers.IntegerField()
    agreement = serializers.DictField(help_text="weighted / uniform: accuracy and kappa with 95% intervals and n; "
                                                "by_aspect: per question")
    calibration = serializers.DictField(help_text="weighted / uniform: the debiased ECE with its interval, Brier")
    spread = serializers.DictField(help_text="all (and by_aspect): n, mean, quantiles, histogram, extreme share")
    position = serializers.ListField(child=serializers.DictField(),
                                     help_text="Per permutation: label flip rate (Wilson interval), mean absolute "
                                               "belief change, n, and the probe runs")
    length = serializers.DictField(allow_null=True, help_text="Free-text: Spearman's rho of P(correct) against the "
                                                              "answer's length with interval and n; agreement by length")


class JudgeQualityApi(generics.GenericAPIView):
    """GET: the judge configuration's quality card (agreement with people, calibration, the belief's spread,
    position and length bias), every figure with its n."""

    permission_classes = [IsResearcher]
    serializer_class = JudgeQualitySerializer

    @extend_schema(tags=["evaluation"], responses={200: JudgeQualitySerializer})
    def get(self, request, name: str):
        config = services.judge_config_get(name=name)
        return Response(quality_selectors.judge_quality_card(config=config))


class JudgeProbeLaunchApi(generics.GenericAPIView):
    """POST: a position probe of one of the configuration's judge runs (its targets sampled and judged again with
    the options permuted, on Celery); the flips show on the quality card."""

    permission_classes = [IsResearcher]
    serializer_class = JudgeProbeLaunchSerializer

    @extend_schema(tags=["evaluation"], request=JudgeProbeLaunchSerializer, responses={201: JudgeRunSerializer})
    def post(self, request, name: str):
        config = services.judge_config_get(name=name)
        given = JudgeProbeLaunchSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = dict(given.validated_data)
        judge_run = next(iter(quality_selectors.probe_choices(config=config, pk=data.pop("judge_run"))), None)
        if judge_run is None:
            raise NotFound(gettext("No judge run of this configuration that a position probe may permute."),
                           field="judge_run")
        probed = services.judge_probe_launch(judge_run=judge_run, kind=data.pop("permutation"), user=request.user,
                                             **data)
        return Response(JudgeRunSerializer(probed).data, status=status.HTTP_201_CREATED)
