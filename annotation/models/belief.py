"""Belief labels: labels proposed by the LLM judge with its belief that they are right, and
people's reviews of them (review queue, leases, reviews, final label with its provenance).

The judge (evaluation) writes labels only through `annotation.services.belief_labels_record`, whose
ROW_FIELDS and docstring are the contract (README, "The LLM judge"). Nothing here is overwritten: each
review is its own row.
"""
from __future__ import annotations

import random

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotation import review_order
from annotation.models.items import Item


class LabelTask(models.TextChoices):
    FREE_TEXT = "free-text", _("Free-text answer")
    SCREENING = "screening", _("Screening (Table 7)")
    CLUE_GRAPH = "clue-graph", _("Clue-graph draft")


class LabelStatus(models.TextChoices):
    SCORED = "scored", _("Scored")
    UNSCORED = "unscored", _("Unscored")  # the judge's reply could not be parsed: raw text kept
    ERROR = "error", _("Error")


class ReviewOrder(models.TextChoices):
    TRIAGE = review_order.TRIAGE, _("Lowest belief first (triage)")
    AUDIT = review_order.AUDIT, _("Uniform random (audit)")


class HandoutStream(models.TextChoices):
    RANDOM = review_order.RANDOM, _("Uniform random share")
    ORDER = review_order.ORDER, _("Queue order")


class LabelSource(models.TextChoices):
    """Where a final label (or decision) came from."""

    JUDGE_ACCEPTED = "judge-accepted", _("Judge accepted")
    JUDGE_OVERRIDDEN = "judge-overridden", _("Judge overridden")
    HUMAN_ONLY = "human-only", _("Human only")
    AUTO_ACCEPTED = "auto-accepted", _("Accepted without review (belief above threshold)")


class ReviewVia(models.TextChoices):
    QUEUE = "queue", _("Review queue")
    VERIFICATION = "verification", _("Verification screen")
    CLUE_GRAPH = "clue-graph", _("Clue-graph screen")


KEEP_ASPECT = "keep"
#: What a person does with a clue-graph draft, as the label of their review ("draft" = accepted as is).
DRAFT_ACCEPTED, DRAFT_EDITED, DRAFT_DISCARDED = "draft", "edited", "discarded"


def new_audit_key() -> float:
    """The label's place in the uniform random order (see annotation.review_order)."""
    return random.random()


class BeliefQueue(models.Model):
    """One judge configuration's labels and their review policy."""

    name = models.SlugField(max_length=64, unique=True)
    description = models.TextField(blank=True)
    order = models.CharField(max_length=10, choices=ReviewOrder.choices, default=ReviewOrder.TRIAGE)
    random_share = models.FloatField(default=0.2, help_text="Share of every hand-out drawn uniformly at random.")
    reviewers_per_label = models.PositiveSmallIntegerField(default=1, help_text="k: reviews each label gets.")
    # Blind by default: a reviewer who sees the judge's label first tends to agree with it, which inflates the trust
    # figures measured from the reviews; a researcher may turn it off on the trust page.
    blind = models.BooleanField(default=True, help_text="Hide the judge's label until the reviewer has answered.")
    accept_threshold = models.FloatField(
        null=True, blank=True, help_text="Labels with belief >= this are accepted without review (audits aside).")
    lease_minutes = models.PositiveIntegerField(default=30)
    # Review until precise enough: with a target, the queue hands out no more labels once the anytime-valid
    # confidence sequence of its headline share (over the uniform sample) is at most this wide each side.
    target_half_width = models.FloatField(
        null=True, blank=True,
        help_text="Stop handing out once the 95% confidence sequence's half-width is at most this (0 < x < 0.5).")
    handouts = models.PositiveIntegerField(default=0, help_text="Hand-outs so far (numbers the random share).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(random_share__gte=0, random_share__lte=1),
                                   name="belief_queue_share_in_unit"),
            models.CheckConstraint(condition=Q(reviewers_per_label__gte=1), name="belief_queue_k_positive"),
            models.CheckConstraint(condition=Q(lease_minutes__gte=1), name="belief_queue_lease_positive"),
            models.CheckConstraint(
                condition=Q(accept_threshold__isnull=True) | Q(accept_threshold__gte=0, accept_threshold__lte=1),
                name="belief_queue_threshold_in_unit"),
            models.CheckConstraint(
                condition=Q(target_half_width__isnull=True) | Q(target_half_width__gt=0, target_half_width__lt=0.5),
                name="belief_queue_target_half_width"),
        ]

    def __str__(self) -> str:
        return self.name


class BeliefLabel(models.Model):
    """One label proposed by the judge for one aspect of one target, with its belief."""

    queue = models.ForeignKey(BeliefQueue, on_delete=models.PROTECT, related_name="labels")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="belief_labels")
    item_version = models.PositiveIntegerField(help_text="The item's content version (Item.content_version) judged.")
    task = models.CharField(max_length=20, choices=LabelTask.choices)
    target = models.CharField(max_length=64, help_text='What is labelled, e.g. "result:123" or "item:45".')
    aspect = models.CharField(max_length=32, help_text='"verdict", "1.1".."1.5", "keep" or "graph".')
    label = models.CharField(max_length=64, blank=True)
    choices = models.JSONField(default=list, help_text="The labels a reviewer may pick.")
    payload = models.JSONField(default=dict, blank=True)
    belief = models.FloatField(null=True, blank=True, help_text="The judge's belief that its label is right.")
    belief_source = models.CharField(max_length=20)
    status = models.CharField(max_length=10, choices=LabelStatus.choices, default=LabelStatus.SCORED)
    rationale = models.TextField(blank=True)
    raw_output = models.TextField(blank=True)
    prompt_hash = models.CharField(max_length=20, blank=True)
    producer = models.CharField(max_length=64, blank=True)
    tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    final_label = models.CharField(max_length=64, blank=True)
    final_source = models.CharField(max_length=20, choices=LabelSource.choices, blank=True)
    audit_key = models.FloatField(default=new_audit_key, help_text="Place in the uniform random order, in [0, 1).")
    tie_key = models.FloatField(
        null=True, blank=True, default=new_audit_key,
        help_text="Order among labels of equal belief in the triage order, in [0, 1), drawn apart from the audit key "
                  "(empty for labels recorded before it existed: their ties went by the audit key).")
    first_stream = models.CharField(max_length=10, choices=HandoutStream.choices, blank=True,
                                    help_text="The stream that first handed the label out (sampling design).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["queue_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "target", "aspect", "item_version"],
                                    name="belief_label_one_per_target"),
            models.CheckConstraint(condition=Q(belief__isnull=True) | Q(belief__gte=0, belief__lte=1),
                                   name="belief_label_belief_in_unit"),
            models.CheckConstraint(condition=~Q(status="scored") | Q(belief__isnull=False),
                                   name="belief_label_scored_has_belief"),
            models.CheckConstraint(condition=Q(audit_key__gte=0, audit_key__lt=1), name="belief_label_audit_key"),
            models.CheckConstraint(condition=Q(tie_key__isnull=True) | Q(tie_key__gte=0, tie_key__lt=1),
                                   name="belief_label_tie_key"),
        ]
        indexes = [
            models.Index(fields=["queue", "belief", "audit_key"], name="belief_label_triage_idx"),
            models.Index(fields=["queue", "audit_key"], name="belief_label_audit_idx"),
            models.Index(fields=["item", "task"], name="belief_label_item_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.queue} {self.target} {self.aspect}: {self.label or self.status}"


class BeliefLeaseStatus(models.TextChoices):
    LEASED = "leased", _("Leased")
    SUBMITTED = "submitted", _("Submitted")
    RELEASED = "released", _("Released")  # given back or expired


class BeliefLease(models.Model):
    """A label handed out to one reviewer for a while: a hand-out of the review queue."""

    label = models.ForeignKey(BeliefLabel, on_delete=models.PROTECT, related_name="leases")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="belief_leases")
    status = models.CharField(max_length=10, choices=BeliefLeaseStatus.choices, default=BeliefLeaseStatus.LEASED)
    stream = models.CharField(max_length=10, choices=HandoutStream.choices)
    handout_number = models.PositiveIntegerField()
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-leased_at"]
        constraints = [
            # Never the same label to two reviewers at once.
            models.UniqueConstraint(fields=["label"], condition=Q(status="leased"), name="belief_lease_one_holder"),
            # A reviewer reviews a label once.
            models.UniqueConstraint(fields=["label", "reviewer"], condition=Q(status__in=["leased", "submitted"]),
                                    name="belief_lease_once_per_reviewer"),
            models.CheckConstraint(condition=Q(expires_at__gte=models.F("leased_at")), name="belief_lease_expiry"),
            models.CheckConstraint(condition=~Q(status="submitted") | Q(submitted_at__isnull=False),
                                   name="belief_lease_submitted_has_time"),
        ]
        indexes = [models.Index(fields=["reviewer", "status"], name="belief_lease_reviewer_idx")]

    def __str__(self) -> str:
        return f"{self.label} -> {self.reviewer} ({self.status})"


class BeliefReview(models.Model):
    """One person's label for a judge label: append-only."""

    label = models.ForeignKey(BeliefLabel, on_delete=models.PROTECT, related_name="reviews")
    lease = models.OneToOneField(BeliefLease, null=True, blank=True, on_delete=models.PROTECT, related_name="review")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="belief_reviews")
    human_label = models.CharField(max_length=64)
    agrees = models.BooleanField(null=True, help_text="Whether it is the judge's label (None: the judge gave none).")
    blind = models.BooleanField(help_text="The judge's label was hidden until this answer.")
    via = models.CharField(max_length=20, choices=ReviewVia.choices, default=ReviewVia.QUEUE)
    comment = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="From hand-out to answer.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["label", "reviewer"], name="belief_review_once_per_reviewer"),
            models.CheckConstraint(condition=~Q(via="queue") | Q(lease__isnull=False), name="belief_review_queue_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.label}: {self.reviewer} says {self.human_label}"

    def save(self, *args, **kwargs):
        # Reviews are evidence: refuse to rewrite one that exists.
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("BeliefReview is append-only; record a new review instead.")
        super().save(*args, **kwargs)


class BeliefSighting(models.Model):
    """A person was shown a label's judge (its label, belief, rationale) on an annotator page or API answer: a review
    they give of that label later is not blind, whatever the queue's policy is by then (a queue turned blind, or
    asking more reviewers, after they saw it). Written by `annotation.services.belief_sightings`; append-only."""

    label = models.ForeignKey(BeliefLabel, on_delete=models.CASCADE, related_name="sightings")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="belief_sightings")
    via = models.CharField(max_length=40, help_text="Where it was shown: the page or API that showed it first.")
    at = models.DateTimeField(auto_now_add=True, help_text="When it was first shown to this person.")

    class Meta:
        ordering = ["label_id", "at", "id"]
        constraints = [models.UniqueConstraint(fields=["label", "user"], name="belief_sighting_once")]

    def __str__(self) -> str:
        return f"{self.label} seen by {self.user} ({self.via})"
