"""REST API of the researcher tables (researchers only): the leaderboard and two runs compared.

The same selectors as the pages and the `leaderboard` command; the query is validated by a
serializer, a refusal (no split, unknown reference, runs on different splits) is a 400 through
the project's exception handler."""
from __future__ import annotations

from django import forms
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response

from evaluation.forms.runs import MAX_INT, parse_run_ids
from evaluation.models import OptionOrder, Run
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.leaderboard import leaderboard
from evaluation.selectors.pairwise import pairwise_table
from evaluation.statistics.paired import CORRECTIONS
from evaluation.statistics.quality_checks import FLAG_KINDS
from foundation.roles import IsResearcher


class ExclusionQuerySerializer(serializers.Serializer):
    """Leave out the items the data-quality report of the split flags (as the pages and commands do)."""

    exclude_flagged = serializers.BooleanField(required=False, default=False,
                                               help_text="Exclude every flagged item (any kind).")
    exclude = serializers.ListField(child=serializers.ChoiceField(choices=list(FLAG_KINDS)), required=False,
                                    default=list, max_length=len(FLAG_KINDS),
                                    help_text="Exclude the items flagged with these kinds (repeat the parameter).")

    @staticmethod
    def exclusion(data: dict) -> tuple[str, ...]:
        return tuple(FLAG_KINDS) if data.get("exclude_flagged") else tuple(dict.fromkeys(data.get("exclude") or ()))


class LeaderboardQuerySerializer(ExclusionQuerySerializer):
    split = serializers.CharField(required=False, allow_blank=True, default="", max_length=40,
                                  help_text="The split (required unless runs are given).")
    runs = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000,
                                 help_text="Comma-separated run ids: a table over their common items.")
    option_order = serializers.ChoiceField(choices=OptionOrder.choices, default=OptionOrder.ORIGINAL)
    common = serializers.BooleanField(required=False, default=False,
                                      help_text="Only the items common to every cell.")
    reference = serializers.CharField(required=False, allow_blank=True, default="", max_length=400,
                                      help_text="METHOD@ENDPOINT of the reference cell of the paired tests.")

    def validate_runs(self, value: str) -> list[int]:
        try:
            return parse_run_ids(value)
        except forms.ValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc


_FLOAT_PAIR = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True)
_INT_PAIR = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2, allow_null=True)


class LeaderboardCellSerializer(serializers.Serializer):
    method = serializers.CharField()
    endpoint = serializers.CharField()
    model = serializers.CharField()
    run = serializers.IntegerField()
    split = serializers.CharField()
    option_order = serializers.CharField()
    n = serializers.IntegerField()
    correct = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    accuracy_ci95 = _FLOAT_PAIR
    keyinfo = serializers.FloatField(allow_null=True)
    first_option_baseline = serializers.FloatField(allow_null=True)
    parse_failures = serializers.IntegerField()
    errors = serializers.IntegerField()
    stale_dropped = serializers.IntegerField()
    is_reference = serializers.BooleanField()
    pairs = serializers.IntegerField(allow_null=True)
    pairs_dropped = _INT_PAIR
    discordant = _INT_PAIR
    p_value = serializers.FloatField(allow_null=True)
    p_holm = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(allow_null=True)
    circular_accuracy = serializers.FloatField(allow_null=True, help_text="Circular order: items right in every "
                                               "rotation of their first sample / circular_n")
    circular_n = serializers.IntegerField(allow_null=True)
    judged = serializers.ListField(child=serializers.DictField(), allow_null=True,
                                   help_text="Free-text cells: per judge configuration, the accuracy from the judge "
                                             "alone, people alone and judge-powered (PPI++), each with its n")


class BaselineCellSerializer(serializers.Serializer):
    endpoint = serializers.CharField()
    n = serializers.IntegerField()
    value = serializers.FloatField(allow_null=True)
    ci95 = _FLOAT_PAIR
    items = serializers.IntegerField(allow_null=True)


class BaselineRowSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    note = serializers.CharField()
    cells = serializers.ListField(child=BaselineCellSerializer(allow_null=True),
                                  help_text="One per endpoint column, in the order of the table; null where empty.")


class LeaderboardSerializer(serializers.Serializer):
    split = serializers.CharField()
    runs = serializers.ListField(child=serializers.IntegerField())
    option_order = serializers.CharField()
    common = serializers.BooleanField()
    common_items = serializers.IntegerField(allow_null=True)
    scope = serializers.CharField()
    alpha = serializers.FloatField()
    excluded_kinds = serializers.ListField(child=serializers.CharField(), help_text="Flags whose items were left out")
    excluded_items = serializers.IntegerField(help_text="Flagged items of the table's item set left out")
    rejected_items = serializers.IntegerField(help_text="Rejected (deleted) items of the table's item set left out")
    reference = serializers.CharField(allow_null=True)
    cells = LeaderboardCellSerializer(many=True)
    baselines = BaselineRowSerializer(many=True)



def _leaderboard_of(query) -> tuple:
    """The leaderboard a validated leaderboard query asks for, and the query's values (400 when invalid)."""
    query.is_valid(raise_exception=True)
    d = query.validated_data
    return leaderboard(split=d["split"], run_ids=d["runs"], option_order=d["option_order"], common=d["common"],
                       reference=d["reference"], exclude=query.exclusion(d)), d


class LeaderboardApi(generics.GenericAPIView):
    """Paper Table 4 for a split (or chosen runs), with exact McNemar tests against a reference cell."""

    permission_classes = [IsResearcher]
    serializer_class = LeaderboardSerializer

    @extend_schema(tags=["evaluation"], parameters=[LeaderboardQuerySerializer],
                   responses={200: LeaderboardSerializer,
                              400: OpenApiResponse(description="no split or runs, unknown reference cell, "
                                                               "runs of one cell or of different splits")})
    def get(self, request):
        table, _ = _leaderboard_of(LeaderboardQuerySerializer(data=request.query_params))
        return Response(table.as_json())


class PairwiseQuerySerializer(LeaderboardQuerySerializer):
    correction = serializers.ChoiceField(choices=list(CORRECTIONS), default="holm",
                                         help_text="holm: family-wise error (Holm); bh: false discovery rate "
                                                   "(Benjamini-Hochberg)")


class PairTestSerializer(serializers.Serializer):
    a = serializers.CharField(help_text="METHOD@ENDPOINT, or humans")
    b = serializers.CharField()
    test = serializers.CharField(help_text="exact McNemar (cells) or item sign-flip (humans against a cell)")
    n = serializers.IntegerField(help_text="(item, version) pairs both have")
    a_only = serializers.IntegerField()
    b_only = serializers.IntegerField()
    a_accuracy = serializers.FloatField(allow_null=True)
    b_accuracy = serializers.FloatField(allow_null=True)
    difference = serializers.FloatField(allow_null=True)
    ci95 = _FLOAT_PAIR
    a_better = serializers.IntegerField()
    b_better = serializers.IntegerField()
    raters = serializers.IntegerField(allow_null=True, help_text="humans: answers on the n items")
    p_value = serializers.FloatField(allow_null=True)
    p_adjusted = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(allow_null=True)
    winner = serializers.CharField(allow_blank=True)


class PairwiseSerializer(serializers.Serializer):
    scope = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    correction = serializers.CharField()
    correction_label = serializers.CharField()
    alpha = serializers.FloatField()
    notes = serializers.ListField(child=serializers.CharField())
    tests = PairTestSerializer(many=True)


class LeaderboardPairwiseApi(generics.GenericAPIView):
    """Every pair of the leaderboard's cells (exact McNemar) and humans against each cell (item sign-flip test),
    corrected together by Holm or Benjamini-Hochberg."""

    permission_classes = [IsResearcher]
    serializer_class = PairwiseSerializer

    @extend_schema(tags=["evaluation"], parameters=[PairwiseQuerySerializer],
                   responses={200: PairwiseSerializer,
                              400: OpenApiResponse(description="no split or runs, unknown reference cell, "
                                                               "runs of one cell or of different splits")})
    def get(self, request):
        table, d = _leaderboard_of(PairwiseQuerySerializer(data=request.query_params))
        return Response(pairwise_table(table, correction=d["correction"]).as_json() | {"scope": table.scope})


class RunCompareQuerySerializer(ExclusionQuerySerializer):
    a = serializers.IntegerField(min_value=1, max_value=MAX_INT, help_text="Run A (the reference side)")
    b = serializers.IntegerField(min_value=1, max_value=MAX_INT, help_text="Run B")


class DiffRowSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    external_id = serializers.CharField()
    question_type = serializers.CharField()
    item_version = serializers.IntegerField()
    stale = serializers.BooleanField()
    gold = serializers.IntegerField(allow_null=True, help_text="The correct option at item_version (0-based)")
    a_correct = serializers.BooleanField()
    a_answer = serializers.IntegerField(allow_null=True)
    a_result = serializers.IntegerField()
    b_correct = serializers.BooleanField()
    b_answer = serializers.IntegerField(allow_null=True)
    b_result = serializers.IntegerField()


class DroppedSerializer(serializers.Serializer):
    only_a = serializers.IntegerField()
    only_b = serializers.IntegerField()


class RunComparisonSerializer(serializers.Serializer):
    a = serializers.IntegerField()
    b = serializers.IntegerField()
    split = serializers.CharField()
    pairs = serializers.IntegerField()
    dropped = DroppedSerializer()
    stale_pairs = serializers.IntegerField()
    excluded_kinds = serializers.ListField(child=serializers.CharField(), help_text="Flags whose items were left out")
    excluded_items = serializers.IntegerField(help_text="Flagged items either run answered, left out")
    rejected_items = serializers.IntegerField(help_text="Rejected (deleted) items either run answered, left out")
    table = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()),
                                  help_text="[[both right, A right / B wrong], [A wrong / B right, both wrong]]")
    discordant = _INT_PAIR
    p_value = serializers.FloatField(allow_null=True)
    accuracy_a = serializers.FloatField(allow_null=True)
    accuracy_b = serializers.FloatField(allow_null=True)
    differing = DiffRowSerializer(many=True)


class RunCompareApi(generics.GenericAPIView):
    """Two runs on the (item, version) pairs both have: the 2x2 table, exact McNemar, the items that differ."""

    permission_classes = [IsResearcher]
    serializer_class = RunComparisonSerializer

    @extend_schema(tags=["evaluation"], parameters=[RunCompareQuerySerializer],
                   responses={200: RunComparisonSerializer,
                              400: OpenApiResponse(description="the same run twice, or runs on different splits"),
                              404: OpenApiResponse(description="no such run")})
    def get(self, request):
        query = RunCompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        runs = Run.objects.select_related("endpoint").defer("item_ids", "requested_ids")
        a = get_object_or_404(runs, pk=query.validated_data["a"])
        b = get_object_or_404(runs, pk=query.validated_data["b"])
        return Response(run_comparison(a=a, b=b, exclude=query.exclusion(query.validated_data)).as_json())
