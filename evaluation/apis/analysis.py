"""REST API of the analysis pages (researchers only): sweeps (estimate, then launch), the figures (their
numbers as JSON, the drawing as SVG, PNG or PDF) and the data-quality report of a split.

The same services and selectors as the pages and the `figure` command; a refused query is a 400
through the project's exception handler, never a 500."""
from __future__ import annotations

from django.http import HttpResponse
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from evaluation.apis.runs import PreflightFlagSerializer, RunSerializer, SelectionSerializer
from evaluation.apis.tables import ExclusionQuerySerializer
from evaluation.figures.data import FIGURES
from evaluation.figures.drawing import FORMATS, draw, render
from evaluation.forms.runs import MAX_SWEEP_ENDPOINTS
from evaluation.models import ModelEndpoint, OptionOrder
from evaluation.selectors import analysis, quality
from evaluation.selectors import runs as selectors
from evaluation.services import runs as services
from evaluation.services.sweeps import launch_check, sweep_estimate
from foundation.downloads import attach
from foundation.errors import Invalid, NotFound
from foundation.numerals import is_number
from foundation.roles import IsResearcher

MAX_SWEEP_METHODS = 20


# --------------------------------------------------------------------------- sweeps

class SweepSerializer(PreflightFlagSerializer, SelectionSerializer):
    """Endpoints x methods over one item selection: one run per pair."""

    endpoints = serializers.PrimaryKeyRelatedField(queryset=ModelEndpoint.objects.all(), many=True,
                                                   allow_empty=False,
                                                   help_text=f"Endpoint ids (at most {MAX_SWEEP_ENDPOINTS})")
    methods = serializers.ListField(child=serializers.ChoiceField(choices=SelectionSerializer.METHODS),
                                    allow_empty=False, max_length=MAX_SWEEP_METHODS)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)

    def validate_endpoints(self, value: list) -> list:
        if len(value) > MAX_SWEEP_ENDPOINTS:
            raise serializers.ValidationError(gettext("At most %(n)s endpoints in one sweep.")
                                              % {"n": MAX_SWEEP_ENDPOINTS})
        return value


class EstimateRunSerializer(serializers.Serializer):
    method = serializers.CharField()
    label = serializers.CharField()
    items = serializers.IntegerField()
    rows = serializers.IntegerField()
    requests = serializers.IntegerField()
    tokens_in = serializers.IntegerField(help_text="Approximate (words and punctuation, not a tokenizer)")


class EndpointEstimateSerializer(serializers.Serializer):
    endpoint = serializers.CharField()
    runs = EstimateRunSerializer(many=True)
    requests = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    max_tokens_out = serializers.IntegerField(allow_null=True)
    cost_in = serializers.FloatField(allow_null=True)
    cost_out_max = serializers.FloatField(allow_null=True)
    builtin = serializers.BooleanField()
    priced = serializers.BooleanField()


class SweepEstimateSerializer(serializers.Serializer):
    runs = serializers.IntegerField()
    requests = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    cost_in = serializers.FloatField(allow_null=True, help_text="Input cost over the endpoints with prices")
    cost_out_max = serializers.FloatField(allow_null=True, help_text="Output cost if every answer is max_tokens")
    priced = serializers.BooleanField()
    unpriced = serializers.ListField(child=serializers.CharField(),
                                     help_text="Endpoints that are not free but have no prices")
    endpoints = EndpointEstimateSerializer(many=True)


class SweepLaunchedSerializer(serializers.Serializer):
    estimate = SweepEstimateSerializer()
    preflight_warnings = serializers.ListField(child=serializers.CharField(),
                                               help_text="What the endpoint check warned of (e.g. a key variable not set)")
    runs = RunSerializer(many=True)


def _sweep_args(data: dict) -> dict:
    data = dict(data)
    data.pop("no_preflight", None)
    return {"endpoints": data.pop("endpoints"), "methods": data.pop("methods"), **data}


class SweepEstimateApi(generics.GenericAPIView):
    """What a sweep would ask before it starts: requests, tokens and (where endpoints have prices) cost."""

    permission_classes = [IsResearcher]
    serializer_class = SweepSerializer

    @extend_schema(tags=["evaluation"], request=SweepSerializer,
                   responses={200: SweepEstimateSerializer,
                              400: OpenApiResponse(description="invalid fields, or no items match the selection")})
    def post(self, request):
        sweep = SweepSerializer(data=request.data)
        sweep.is_valid(raise_exception=True)
        return Response(sweep_estimate(**_sweep_args(sweep.validated_data)).as_dict())


class SweepLaunchApi(generics.GenericAPIView):
    """Launch a sweep: one run per (endpoint, method), all of them or none; answers the runs and the estimate."""

    permission_classes = [IsResearcher]
    serializer_class = SweepSerializer

    @extend_schema(tags=["evaluation"], request=SweepSerializer,
                   responses={201: SweepLaunchedSerializer,
                              400: OpenApiResponse(description="invalid fields, no items match, or a method "
                                                               "needs demonstrations that are not imported")})
    def post(self, request):
        sweep = SweepSerializer(data=request.data)
        sweep.is_valid(raise_exception=True)
        args = _sweep_args(sweep.validated_data)
        plan, warnings = launch_check(check=not sweep.validated_data.get("no_preflight"), **args)
        runs = services.sweep_launch(user=request.user, **args)
        return Response({"estimate": plan.as_dict(), "preflight_warnings": warnings,
                         "runs": RunSerializer(selectors.with_progress(runs), many=True).data},
                        status=status.HTTP_201_CREATED)


# --------------------------------------------------------------------------- figures

def _check_split(split: str) -> str:
    if split not in quality.quality_splits():
        raise Invalid(gettext("No split %(split)r; choose from %(splits)s.")
                      % {"split": split, "splits": ", ".join(quality.quality_splits()) or gettext("none yet")},
                      field="split")
    return split


class FigureQuerySerializer(ExclusionQuerySerializer):
    split = serializers.CharField(max_length=40, help_text="The split whose runs the figure shows (never a mix)")
    option_order = serializers.ChoiceField(choices=[("", "any")] + list(OptionOrder.choices), required=False,
                                           allow_blank=True, default=OptionOrder.ORIGINAL,
                                           help_text="Runs with this option order; empty: any, each run labelled")
    runs = serializers.CharField(required=False, allow_blank=True, max_length=2000,
                                 help_text="Comma-separated run ids to show (default: the latest finished run of each "
                                           "method and endpoint on the split)")

    def validate_runs(self, value: str) -> list[int]:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not all(is_number(p, most_digits=9) for p in parts):
            raise serializers.ValidationError(gettext("Run ids are numbers, separated by commas."))
        return [int(p) for p in parts]


def _figure_data(name: str, params) -> tuple[object, str]:
    if name not in FIGURES:
        raise NotFound(gettext("No figure %(name)r; choose from %(figures)s.")
                       % {"name": name, "figures": ", ".join(FIGURES)})
    query = FigureQuerySerializer(data=params)
    query.is_valid(raise_exception=True)
    d = query.validated_data
    split = _check_split(d["split"])
    return analysis.figure_data(name, split=split, option_order=d["option_order"],
                                exclude=query.exclusion(d), run_ids=d.get("runs") or ()), split


class FigureListSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    formats = serializers.ListField(child=serializers.CharField())


class FigureListApi(generics.GenericAPIView):
    """The figures there are (names as on the page and in the `figure` command)."""

    permission_classes = [IsResearcher]
    serializer_class = FigureListSerializer
    pagination_class = None

    @extend_schema(tags=["evaluation"], responses={200: FigureListSerializer(many=True)})
    def get(self, request):
        return Response([{"name": name, "title": title, "formats": [*FORMATS, "json"]}
                         for name, title in FIGURES.items()])


_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, enum=list(FIGURES), description="The figure")


class FigureDataApi(generics.GenericAPIView):
    """A figure's numbers (points and Pearson's r, or accuracy per group with each n) and what it is over."""

    permission_classes = [IsResearcher]
    serializer_class = FigureQuerySerializer

    @extend_schema(tags=["evaluation"], operation_id="evaluation_figure_data", parameters=[_NAME, FigureQuerySerializer],
                   responses={200: OpenApiTypes.OBJECT,
                              400: OpenApiResponse(description="no or unknown split, unknown flag kind or run"),
                              404: OpenApiResponse(description="no such figure"),
                              409: OpenApiResponse(description="the figure would be empty: why, and what to do")})
    def get(self, request, name: str):
        data, split = _figure_data(name, request.query_params)
        return Response({"figure": name, "split": split, **data.as_dict()})


class _FileRenderer(BaseRenderer):
    """Lets a client ask for the file's type; the file itself is sent as is (an HttpResponse)."""

    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else JSONRenderer().render(data)


_RENDERERS = [JSONRenderer] + [type(f"{fmt.upper()}Renderer", (_FileRenderer,), {"media_type": mime, "format": fmt})
                               for fmt, mime in FORMATS.items()]


class FigureFileApi(generics.GenericAPIView):
    """A figure drawn by matplotlib as a file for a paper: SVG, PNG (200 dpi) or PDF (TrueType fonts)."""

    permission_classes = [IsResearcher]
    serializer_class = FigureQuerySerializer
    renderer_classes = _RENDERERS

    @extend_schema(tags=["evaluation"], operation_id="evaluation_figure_file",
                   parameters=[_NAME, OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(FORMATS),
                                                       description="File format"), FigureQuerySerializer],
                   responses={(200, mime): OpenApiTypes.BINARY for mime in FORMATS.values()} | {
                       400: OpenApiResponse(description="no or unknown split, unknown flag kind or run"),
                       404: OpenApiResponse(description="no such figure or format"),
                       409: OpenApiResponse(description="the figure would be empty: why, and what to do")})
    def get(self, request, name: str, fmt: str):
        if fmt not in FORMATS:
            raise NotFound(gettext("No format %(fmt)r; choose from %(formats)s.")
                           % {"fmt": fmt, "formats": ", ".join(FORMATS)})
        data, split = _figure_data(name, request.query_params)
        response = HttpResponse(render(draw(data), fmt), content_type=FORMATS[fmt])
        return attach(response, f"{name}-{split}", fmt)


# --------------------------------------------------------------------------- data quality

class QualityQuerySerializer(serializers.Serializer):
    split = serializers.CharField(max_length=40, help_text="The split to check")


class FlagKindSerializer(serializers.Serializer):
    kind = serializers.CharField()
    description = serializers.CharField()
    count = serializers.IntegerField()


class QualityReportSerializer(serializers.Serializer):
    split = serializers.CharField()
    n_items = serializers.IntegerField()
    kinds = FlagKindSerializer(many=True)
    n_flagged = serializers.IntegerField()
    clues = serializers.DictField(help_text="Clue anchoring: clues, exact, fuzzy, unanchored, ...")
    answer_positions = serializers.DictField(help_text="Answer-position skew: counts, shares, chi-square p")
    languages = serializers.ListField(child=serializers.CharField())
    flagged = serializers.ListField(child=serializers.DictField(), help_text="Every flagged item and its flags")


class QualityReportApi(generics.GenericAPIView):
    """The data-quality report of a split: duplicate options, a correct option's text repeated, clues that do
    not anchor, missing translations, answer-position skew; the flagged items analyses can exclude."""

    permission_classes = [IsResearcher]
    serializer_class = QualityReportSerializer

    @extend_schema(tags=["evaluation"], parameters=[QualityQuerySerializer],
                   responses={200: QualityReportSerializer,
                              400: OpenApiResponse(description="no or unknown split")})
    def get(self, request):
        query = QualityQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(quality.quality_report(split=_check_split(query.validated_data["split"])))
