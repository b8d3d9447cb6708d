"""REST API of belief-label review: queues, labels and reviews (researchers), the next label and
a review (annotators), the trust figures of a queue (researchers)."""
from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation.forms_belief import MAX_REVIEW_COMMENT
from annotation.models import BeliefLabel, BeliefQueue, BeliefReview, LabelStatus, LabelTask, ReviewOrder
from annotation.selectors.belief import belief_labels, belief_reviews, provenance, shown_label
from annotation.selectors.belief_precision import precision
from annotation.selectors.belief_trust import belief_trust
from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from annotation.services.belief_sightings import belief_sightings_record
from foundation.numerals import number_or_none
from foundation.roles import IsAnnotator, IsResearcher


class BeliefQueueSerializer(serializers.ModelSerializer):
    class Meta:
        model = BeliefQueue
        fields = ("id", "name", "description", "order", "random_share", "reviewers_per_label", "blind",
                  "accept_threshold", "lease_minutes", "target_half_width", "created_at")


class BeliefPolicyInSerializer(serializers.Serializer):
    """A change of a queue's review policy: only the fields given change."""

    description = serializers.CharField(required=False, allow_blank=True)
    order = serializers.ChoiceField(choices=ReviewOrder.values, required=False)
    random_share = serializers.FloatField(required=False, min_value=0, max_value=1)
    reviewers_per_label = serializers.IntegerField(required=False, min_value=1, max_value=20)
    blind = serializers.BooleanField(required=False)
    accept_threshold = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    lease_minutes = serializers.IntegerField(required=False, min_value=1, max_value=24 * 60)
    target_half_width = serializers.FloatField(
        required=False, allow_null=True,
        help_text="Review until precise enough: the queue stops handing out once the 95% confidence sequence of its "
                  "share is at most this wide each side (0 < x < 0.5); null clears the target and reopens it.")

    def validate_target_half_width(self, value):
        if value is not None and not 0 < value < 0.5:
            raise serializers.ValidationError(gettext("target_half_width is above 0 and below 0.5 (e.g. 0.05), or "
                                                      "null for no target."))
        return value


class BeliefLabelSerializer(serializers.ModelSerializer):
    queue = serializers.CharField(source="queue.name", read_only=True)
    provenance = serializers.SerializerMethodField(help_text="judge-accepted, judge-overridden, human-only, "
                                                             "auto-accepted, or pending")
    final = serializers.SerializerMethodField(help_text="final_label when set, else the judge's label")

    class Meta:
        model = BeliefLabel
        fields = ("id", "queue", "item", "item_version", "task", "target", "aspect", "label", "choices", "payload",
                  "belief", "belief_source", "status", "rationale", "raw_output", "prompt_hash", "producer", "tokens",
                  "latency_ms", "final_label", "final_source", "final", "provenance", "first_stream", "created_at")

    def get_provenance(self, label) -> str:
        return provenance(label, label.queue.accept_threshold)

    def get_final(self, label) -> str:
        return label.final_label or label.label


class BeliefReviewSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.username", read_only=True)
    judge_label = serializers.CharField(source="label.label", read_only=True)
    belief = serializers.FloatField(source="label.belief", read_only=True, allow_null=True)

    class Meta:
        model = BeliefReview
        fields = ("id", "label", "lease", "reviewer", "human_label", "judge_label", "belief", "agrees", "blind",
                  "via", "comment", "seconds", "created_at")


class HandedLabelSerializer(serializers.Serializer):
    """A label as its reviewer may see it (`shown_label`): in blind review the judge's label, belief,
    belief source and rationale are null and the payload holds only what the label is about (the
    graded answer, the clue-graph draft), none of the judge's own fields."""

    id = serializers.IntegerField(source="pk")
    item = serializers.IntegerField(source="item_id")
    item_version = serializers.IntegerField()
    task = serializers.CharField()
    target = serializers.CharField()
    aspect = serializers.CharField()
    payload = serializers.SerializerMethodField()
    choices = serializers.ListField(child=serializers.CharField())
    label = serializers.SerializerMethodField()
    belief = serializers.SerializerMethodField()
    belief_source = serializers.SerializerMethodField()
    rationale = serializers.SerializerMethodField()

    def get_payload(self, shown) -> dict:
        return {**shown.subject, **(shown.judge.payload if shown.judge else {})}

    def get_label(self, shown) -> str | None:
        return shown.judge.label if shown.judge else None

    def get_belief(self, shown) -> float | None:
        return shown.judge.belief if shown.judge else None

    def get_belief_source(self, shown) -> str | None:
        return shown.judge.belief_source if shown.judge else None

    def get_rationale(self, shown) -> str | None:
        return shown.judge.rationale if shown.judge else None


class BeliefLeaseSerializer(serializers.Serializer):
    """A lease with its label as the reviewer (`context["user"]`) may see it."""

    lease = serializers.IntegerField(source="pk")
    queue = serializers.CharField(source="label.queue.name")
    stream = serializers.SerializerMethodField(
        help_text="The stream that handed the label out (order or random); null while the label is in blind review "
                  "for you (in triage order, the order stream hands out the labels of lowest belief).")
    expires_at = serializers.DateTimeField()
    blind = serializers.BooleanField(source="label.queue.blind")
    label = serializers.SerializerMethodField()

    def _shown(self, lease):
        """The label as `shown_label` gives it to the reader, once per lease (the view's, when it passes it): the
        stream and the label are read from one answer, the one the view records as shown."""
        shown = self.context.get("shown")
        if shown is None or shown.pk != lease.label_id:
            shown = self.context["shown"] = shown_label(lease.label, user=self.context["user"])
        return shown

    def get_stream(self, lease) -> str | None:
        return None if self._shown(lease).judge is None else lease.stream

    @extend_schema_field(HandedLabelSerializer)
    def get_label(self, lease) -> dict:
        return HandedLabelSerializer(self._shown(lease)).data


class BeliefReviewInSerializer(serializers.Serializer):
    human_label = serializers.CharField(max_length=64)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=MAX_REVIEW_COMMENT)


@extend_schema(tags=["belief review"])
class BeliefQueueListApi(generics.ListAPIView):
    """The review queues (one per judge config) and their policy."""

    permission_classes = [IsAnnotator]
    serializer_class = BeliefQueueSerializer
    queryset = BeliefQueue.objects.order_by("name")


@extend_schema(tags=["belief review"], parameters=[
    OpenApiParameter("queue", str, description="Queue name"),
    OpenApiParameter("task", str, enum=LabelTask.values),
    OpenApiParameter("status", str, enum=LabelStatus.values),
    OpenApiParameter("target", str, description="e.g. result:123 (repeatable)", many=True)])
class BeliefLabelListApi(generics.ListAPIView):
    """Judge labels with their belief, final label and its provenance."""

    permission_classes = [IsResearcher]
    serializer_class = BeliefLabelSerializer

    def get_queryset(self):
        params = self.request.query_params
        queue = get_object_or_404(BeliefQueue, name=params["queue"]) if params.get("queue") else None
        filters = {"status": params["status"]} if params.get("status") else {}
        return belief_labels(queue=queue, task=params.get("task") or None,
                             target__in=params.getlist("target") or None, **filters).select_related(
            "queue").order_by("pk")


@extend_schema(tags=["belief review"], parameters=[
    OpenApiParameter("queue", str, description="Queue name"), OpenApiParameter("label", int)])
class BeliefReviewListApi(generics.ListAPIView):
    """People's reviews of judge labels (append-only)."""

    permission_classes = [IsResearcher]
    serializer_class = BeliefReviewSerializer

    def get_queryset(self):
        params = self.request.query_params
        name, raw_label = params.get("queue", ""), params.get("label", "")
        if "\x00" in name:  # PostgreSQL text cannot hold NUL (it was a 500): no queue has such a name
            raise Http404(gettext("No such queue."))
        queue = get_object_or_404(BeliefQueue, name=name) if name else None
        label = number_or_none(raw_label)
        return belief_reviews(queue=queue, label_id=label)


class BeliefNextApi(generics.GenericAPIView):
    permission_classes = [IsAnnotator]
    serializer_class = BeliefLeaseSerializer

    @extend_schema(tags=["belief review"], request=None,
                   responses={200: BeliefLeaseSerializer, 204: OpenApiResponse(description="nothing left for you"),
                              409: OpenApiResponse(description='code "precision_reached": the queue has reached its '
                                                               "precision target and hands out no more labels (with "
                                                               "target_half_width, half_width, n_uniform; to "
                                                               "researchers also interval and estimate)")})
    def post(self, request, name: str):
        """Lease the next judge label of a queue (the same lease again while it is live); 409 with code
        "precision_reached" once the queue has reached its precision target."""
        queue = get_object_or_404(BeliefQueue, name=name)
        lease = belief_lease_next(queue_id=queue.pk, user=request.user)
        if lease is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        shown = shown_label(lease.label, user=request.user)  # what the answer shows, and what is recorded
        belief_sightings_record(user=request.user, shown=[shown], via="api_belief_next")
        return Response(BeliefLeaseSerializer(lease, context={"user": request.user, "shown": shown}).data)


class BeliefReviewSubmitApi(generics.GenericAPIView):
    permission_classes = [IsAnnotator]
    serializer_class = BeliefReviewInSerializer

    @extend_schema(tags=["belief review"], request=BeliefReviewInSerializer,
                   responses={201: BeliefReviewSerializer, 400: OpenApiResponse(description="not one of the choices"),
                              403: OpenApiResponse(description="someone else's lease"),
                              409: OpenApiResponse(description="already reviewed (code already_reviewed, also on "
                                                               "the verification or clue-graph screen), the lease "
                                                               "expired and the label went to someone else or has its "
                                                               "reviews (lease_expired), the label got its reviews "
                                                               "from others meanwhile (label_reviewed), or its item's "
                                                               "verification verdicts can be read "
                                                               "(verification_decided); the lease is given back")})
    def post(self, request, pk: int):
        """Submit your label for the judge label of your lease; the answer reveals the judge's label."""
        data = BeliefReviewInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        review = belief_review_submit(lease_id=pk, user=request.user, **data.validated_data)
        return Response(BeliefReviewSerializer(review).data, status=status.HTTP_201_CREATED)


class BeliefTrustApi(generics.GenericAPIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["belief review"], responses={200: OpenApiResponse(description="trust figures")})
    def get(self, request, name: str):
        """Trust figures of a queue: the uniform-sample and the weighted estimates, with their n."""
        queue = get_object_or_404(BeliefQueue, name=name)
        figures = belief_trust(queue=queue)
        return Response({"queue": BeliefQueueSerializer(queue).data,
                         **{k: v for k, v in figures.items() if k not in ("queue", "rows")}})


class BeliefQueuePolicyApi(generics.GenericAPIView):
    permission_classes = [IsResearcher]
    serializer_class = BeliefPolicyInSerializer

    def _answer(self, queue):
        return Response({**BeliefQueueSerializer(queue).data, "precision": precision(queue=queue)})

    @extend_schema(tags=["belief review"], responses={200: OpenApiResponse(description="the policy and precision")})
    def get(self, request, name: str):
        """A queue's review policy and the precision of its share (half-width now, target, reviews needed)."""
        return self._answer(get_object_or_404(BeliefQueue, name=name))

    @extend_schema(tags=["belief review"], request=BeliefPolicyInSerializer,
                   responses={200: OpenApiResponse(description="the policy and precision"),
                              400: OpenApiResponse(description="a field out of range, named in the answer")})
    def patch(self, request, name: str):
        """Change a queue's review policy, e.g. its precision target (target_half_width; null clears it)."""
        queue = get_object_or_404(BeliefQueue, name=name)
        data = BeliefPolicyInSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return self._answer(belief_queue_policy_set(queue_id=queue.pk, **data.validated_data))
