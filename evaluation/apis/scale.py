"""REST API of the one-scale page (researchers only): people and models fitted with one item-response model on a
split's items (evaluation.selectors.one_scale), the same numbers as the page and its CSV files."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response

from evaluation.apis.analysis import _check_split
from evaluation.selectors.one_scale import one_scale
from foundation.roles import IsResearcher

_FLOAT_PAIR = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2)


class OneScaleQuerySerializer(serializers.Serializer):
    split = serializers.CharField(max_length=40, help_text="The split whose items are fitted")
    model = serializers.ChoiceField(choices=["auto", "2pl", "rasch"], default="auto",
                                    help_text="auto: 2PL when the median item has enough answers, else Rasch")


class RespondentSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="run:ID (a model run) or attempt:ID (a study attempt)")
    kind = serializers.ChoiceField(choices=["model", "person"])
    label = serializers.CharField()
    answers = serializers.IntegerField()
    correct = serializers.IntegerField()
    accuracy = serializers.FloatField()
    ability = serializers.FloatField(help_text="posterior mean on the N(0, 1) population scale")
    se = serializers.FloatField(help_text="posterior standard deviation")
    ci95 = _FLOAT_PAIR


class ItemScaleSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    external_id = serializers.CharField(allow_blank=True)
    version = serializers.IntegerField(help_text="the content version answered (another version is another item)")
    current = serializers.BooleanField()
    difficulty = serializers.FloatField()
    difficulty_se = serializers.FloatField()
    discrimination = serializers.FloatField()
    discrimination_se = serializers.FloatField(allow_null=True, help_text="null under Rasch (one shared)")
    people_answers = serializers.IntegerField()
    people_correct = serializers.IntegerField()
    people_accuracy = serializers.FloatField(allow_null=True)
    model_answers = serializers.IntegerField()
    model_correct = serializers.IntegerField()
    model_accuracy = serializers.FloatField(allow_null=True)
    people_difficulty = serializers.FloatField(allow_null=True)
    model_difficulty = serializers.FloatField(allow_null=True)
    contrast_z = serializers.FloatField(allow_null=True, help_text="> 0: harder for people than for models")


class OneScaleSerializer(serializers.Serializer):
    split = serializers.CharField()
    model = serializers.CharField(help_text="2PL or Rasch")
    reason = serializers.CharField()
    answers = serializers.IntegerField()
    converged = serializers.BooleanField()
    notes = serializers.ListField(child=serializers.CharField())
    respondents = RespondentSerializer(many=True)
    items = ItemScaleSerializer(many=True)
    hard_for_people = serializers.ListField(child=serializers.IntegerField(), help_text="item ids, largest z first")
    hard_for_models = serializers.ListField(child=serializers.IntegerField())


class OneScaleApi(generics.GenericAPIView):
    """Every study attempt and every model run (endpoint x method x option order) of a split on one ability scale,
    with each item's difficulty and discrimination and the items hard for one group and easy for the other."""

    permission_classes = [IsResearcher]
    serializer_class = OneScaleSerializer

    @extend_schema(tags=["evaluation"], parameters=[OneScaleQuerySerializer],
                   responses={200: OneScaleSerializer, 400: OpenApiResponse(description="no or unknown split"),
                              409: OpenApiResponse(description="too few respondents or items to fit")})
    def get(self, request):
        query = OneScaleQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        d = query.validated_data
        return Response(one_scale(split=_check_split(d["split"]), model=d["model"]).as_json())
