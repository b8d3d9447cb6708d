"""REST API of the curation workflow (token or session auth; annotators and researchers)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation import selectors, services
from annotation.errors import ITEM_API_FIELDS
from annotation.forms import MAX_COMMENT, MAX_GRAPH_ROWS, MAX_GRAPH_TEXT, MAX_NOTE
from annotation.models import CRITERIA, MAX_VERSION, Decision, Item, ItemRevision, Stage
from foundation.roles import IsAnnotator


class ItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = ITEM_API_FIELDS


class RevisionSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", default=None, read_only=True)
    stage = serializers.CharField(read_only=True, help_text="The item status in which the change was made.")

    class Meta:
        model = ItemRevision
        fields = ("number", "author", "created_at", "stage", "note", "changed_fields", "snapshot")


class VerificationInSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    criteria = serializers.ListField(child=serializers.ChoiceField(choices=CRITERIA), required=False, default=list)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_COMMENT)
    item_version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION)


class VerificationOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    decision = serializers.CharField()
    criteria = serializers.ListField(child=serializers.CharField())
    item_status = serializers.CharField()


class ClueSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=MAX_GRAPH_TEXT)
    implication = serializers.CharField(allow_blank=True, max_length=MAX_GRAPH_TEXT)


class StepSerializer(serializers.Serializer):
    inputs = serializers.ListField(child=serializers.CharField(max_length=MAX_GRAPH_TEXT), min_length=1,
                                   max_length=MAX_GRAPH_ROWS)
    output = serializers.CharField(max_length=MAX_GRAPH_TEXT)


class ClueGraphInSerializer(serializers.Serializer):
    base_version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION)
    clues = ClueSerializer(many=True, max_length=MAX_GRAPH_ROWS)
    steps = StepSerializer(many=True, max_length=MAX_GRAPH_ROWS)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_NOTE)


class ConflictSerializer(serializers.Serializer):
    """The body of a refused stale edit (409): the error contract plus the stored item."""

    code = serializers.CharField()
    detail = serializers.CharField()
    base_version = serializers.IntegerField()
    current_version = serializers.IntegerField()
    current = ItemSerializer()


class NextItemInSerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=Stage.choices)


class LeaseSerializer(serializers.Serializer):
    lease = serializers.IntegerField(source="pk")
    item = ItemSerializer()
    stage = serializers.CharField()
    expires_at = serializers.DateTimeField()


@extend_schema(tags=["annotation"], parameters=[
    OpenApiParameter("status", str, description="Filter by status"),
    OpenApiParameter("split", str, description="Filter by split"),
    OpenApiParameter("source", str, description="Filter by source")])
class ItemListApi(generics.ListAPIView):
    """Items with their content and curation state."""

    permission_classes = [IsAnnotator]
    serializer_class = ItemSerializer

    def get_queryset(self):
        params = self.request.query_params
        return selectors.item_list(status=params.get("status") or None, split=params.get("split") or None,
                                   source=params.get("source") or None).order_by("pk")


@extend_schema(tags=["annotation"])
class ItemDetailApi(generics.RetrieveAPIView):
    permission_classes = [IsAnnotator]
    serializer_class = ItemSerializer
    queryset = Item.objects.all()


@extend_schema(tags=["annotation"])
class ItemRevisionListApi(generics.ListAPIView):
    """The item's revisions, newest first."""

    permission_classes = [IsAnnotator]
    serializer_class = RevisionSerializer

    def get_queryset(self):
        return selectors.item_revisions(item=get_object_or_404(Item, pk=self.kwargs["pk"]))


class VerificationSubmitApi(generics.GenericAPIView):
    permission_classes = [IsAnnotator]
    serializer_class = VerificationInSerializer
    queryset = Item.objects.all()

    @extend_schema(tags=["annotation"], request=VerificationInSerializer,
                   responses={201: VerificationOutSerializer, 400: OpenApiResponse(description="invalid decision"),
                              409: OpenApiResponse(description="no free slot, already verified, or the item "
                                                               "changed since `item_version`")})
    def post(self, request, pk: int):
        """Submit a keep/delete decision with the Table-7 criteria for an item in verification."""
        item = self.get_object()
        data = self.get_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        verdict = services.verification_submit(item_id=item.pk, user=request.user, **data.validated_data)
        return Response(VerificationOutSerializer({"id": verdict.pk, "decision": verdict.decision,
                                                   "criteria": verdict.criteria,
                                                   "item_status": verdict.item.status}).data,
                        status=status.HTTP_201_CREATED)


class ClueGraphSubmitApi(generics.GenericAPIView):
    permission_classes = [IsAnnotator]
    serializer_class = ClueGraphInSerializer
    queryset = Item.objects.all()

    @extend_schema(tags=["annotation"], request=ClueGraphInSerializer,
                   responses={200: ItemSerializer, 400: OpenApiResponse(description="invalid graph"),
                              409: OpenApiResponse(ConflictSerializer, description="the item changed since "
                                                   "`base_version`, or it is not in the clue-graph stage")})
    def post(self, request, pk: int):
        """Replace an item's clue graph (written back as official evidence / multi_hop_reasoning).

        Refused with 409 and the current item when `base_version` is not the stored version.
        """
        item = self.get_object()
        data = self.get_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = services.clue_graph_replace(
            item_id=item.pk, base_version=data.validated_data["base_version"], user=request.user,
            clues=[(c["text"], c["implication"]) for c in data.validated_data["clues"]],
            steps=[(s["inputs"], s["output"]) for s in data.validated_data["steps"]],
            note=data.validated_data["note"] or "clue graph submitted via API")
        return Response(ItemSerializer(saved).data)


class NextItemApi(generics.GenericAPIView):
    permission_classes = [IsAnnotator]
    serializer_class = NextItemInSerializer

    @extend_schema(tags=["annotation"], request=NextItemInSerializer,
                   responses={200: LeaseSerializer, 204: OpenApiResponse(description="the queue is empty")})
    def post(self, request):
        """Lease the next item of a stage (the same lease again while it is live)."""
        data = self.get_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        lease = services.lease_next(user=request.user, stage=data.validated_data["stage"])
        if lease is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(LeaseSerializer(lease).data)
