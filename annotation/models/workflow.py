"""The curation workflow (paper §3.1, appendix Table 7): stages, annotator leases, decisions, drafts."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotation.models.belief import LabelSource
from annotation.models.items import Item
from annotation.models.stages import Stage


class StageConfig(models.Model):
    """How many independent annotators a stage needs, and how long a lease lasts."""

    stage = models.CharField(max_length=20, choices=Stage.choices, unique=True)
    annotators_required = models.PositiveSmallIntegerField(
        default=1, help_text="k: independent annotators who must complete the stage before the item advances.")
    lease_minutes = models.PositiveIntegerField(default=30, help_text="A lease not submitted in time comes back.")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(annotators_required__gte=1), name="stage_config_k_positive"),
            models.CheckConstraint(condition=Q(lease_minutes__gte=1), name="stage_config_lease_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.get_stage_display()}: k={self.annotators_required}, lease {self.lease_minutes} min"


class AnnotatorLeaseStatus(models.TextChoices):
    LEASED = "leased", _("Leased")
    SUBMITTED = "submitted", _("Submitted")
    RELEASED = "released", _("Released")  # given back or expired: the slot is free again
    SUPERSEDED = "superseded", _("Superseded")  # the item was sent back to this stage: start afresh

    @classmethod
    def live(cls) -> list[AnnotatorLeaseStatus]:
        """The statuses of a lease that holds a slot (counted towards k)."""
        return [cls.LEASED, cls.SUBMITTED]


class AnnotatorLease(models.Model):
    """One annotator's slot on an item in a stage: a lease while working, then submitted."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="annotator_leases")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotator_leases")
    status = models.CharField(max_length=12, choices=AnnotatorLeaseStatus.choices, default=AnnotatorLeaseStatus.LEASED)
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-leased_at"]
        constraints = [
            # One live slot per annotator per item-stage: nobody counts twice towards k.
            models.UniqueConstraint(
                fields=["item", "stage", "annotator"],
                condition=Q(status__in=AnnotatorLeaseStatus.live()),
                name="annotator_lease_one_live_slot",
            ),
            # One open lease per annotator per stage: the hand-out gives back the one they hold,
            # so concurrent next-item requests of one annotator cannot take two items.
            models.UniqueConstraint(
                fields=["annotator", "stage"],
                condition=Q(status=AnnotatorLeaseStatus.LEASED),
                name="annotator_lease_one_open_per_stage",
            ),
            models.CheckConstraint(condition=Q(expires_at__gte=models.F("leased_at")),
                                   name="annotator_lease_expiry_after_lease"),
            models.CheckConstraint(condition=~Q(status=AnnotatorLeaseStatus.SUBMITTED) | Q(submitted_at__isnull=False),
                                   name="annotator_lease_submitted_has_time"),
        ]
        indexes = [models.Index(fields=["stage", "status", "expires_at"], name="annotator_lease_queue_idx"),
                   models.Index(fields=["annotator", "status"], name="annotator_lease_user_idx")]

    def __str__(self) -> str:
        return f"{self.item} {self.stage} {self.annotator} ({self.status})"

    @property
    def is_leased(self) -> bool:
        """Still being worked on (not yet submitted, given back or superseded)."""
        return self.status == AnnotatorLeaseStatus.LEASED


class Criterion(models.TextChoices):
    """Table 7, question verification: delete the item if any of these holds."""

    NEEDS_MEDIA = "needs_media", _("1.1 Needs non-text information (images, audio)")
    HEAVY_MATH = "heavy_math", _("1.2 Heavy mathematics or domain knowledge")
    NO_DAILY_SCENARIO = "no_daily_scenario", _("1.3 No ample daily scenario")
    WRONG_ANSWER = "wrong_answer", _("1.4 The answer is not correct")
    BIAS = "bias", _("1.5 Discrimination or bias (gender, race, nation, religion)")


CRITERIA = tuple(Criterion.values)


class Decision(models.TextChoices):
    KEEP = "keep", _("Keep")
    DELETE = "delete", _("Delete")


class VerificationDecision(models.Model):
    """One annotator's verdict on an item in the verification stage."""

    lease = models.OneToOneField(AnnotatorLease, on_delete=models.PROTECT, related_name="verification")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="verification_decisions")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=6, choices=Decision.choices)
    needs_media = models.BooleanField(default=False, verbose_name=Criterion.NEEDS_MEDIA.label)
    heavy_math = models.BooleanField(default=False, verbose_name=Criterion.HEAVY_MATH.label)
    no_daily_scenario = models.BooleanField(default=False, verbose_name=Criterion.NO_DAILY_SCENARIO.label)
    wrong_answer = models.BooleanField(default=False, verbose_name=Criterion.WRONG_ANSWER.label)
    bias = models.BooleanField(default=False, verbose_name=Criterion.BIAS.label)
    comment = models.TextField(blank=True)
    item_version = models.PositiveIntegerField(help_text="The item version the annotator saw.")
    source = models.CharField(max_length=20, choices=LabelSource.choices, default=LabelSource.HUMAN_ONLY,
                              help_text="Whether the judge's screening suggestion was accepted, overridden or absent.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "created_at"]
        constraints = [
            # Delete needs a reason (a Table-7 criterion); keep means no criterion applies.
            models.CheckConstraint(
                condition=(Q(decision=Decision.KEEP) & Q(needs_media=False, heavy_math=False, no_daily_scenario=False,
                                                   wrong_answer=False, bias=False))
                | (Q(decision=Decision.DELETE) & (Q(needs_media=True) | Q(heavy_math=True) | Q(no_daily_scenario=True)
                                           | Q(wrong_answer=True) | Q(bias=True))),
                name="verification_decision_matches_criteria",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item} {self.annotator}: {self.decision}"

    @property
    def criteria(self) -> list[str]:
        return [name for name in CRITERIA if getattr(self, name)]


class AdjudicationStatus(models.TextChoices):
    OPEN = "open", _("Open")
    RESOLVED = "resolved", _("Resolved")


class Adjudication(models.Model):
    """A disagreement between the k annotators of a stage, settled by a third person."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="adjudications")
    stage = models.CharField(max_length=20, choices=Stage.choices, default=Stage.VERIFICATION)
    status = models.CharField(max_length=10, choices=AdjudicationStatus.choices, default=AdjudicationStatus.OPEN)
    reason = models.TextField(blank=True)
    decision = models.CharField(max_length=6, choices=Decision.choices, blank=True)
    comment = models.TextField(blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["item", "stage"], condition=Q(status=AdjudicationStatus.OPEN),
                                    name="adjudication_one_open_per_item_stage"),
            models.CheckConstraint(condition=Q(status=AdjudicationStatus.OPEN) | ~Q(decision=""),
                                   name="adjudication_resolved_has_decision"),
        ]

    def __str__(self) -> str:
        return f"{self.item} {self.stage} ({self.status})"


class ReviewAction(models.TextChoices):
    APPROVE = "approve", _("Approve and publish")
    SEND_BACK = "send_back", _("Send back")


class ReviewDecision(models.Model):
    """A second annotator's review: approve (publish) or send back to a stage with a comment."""

    lease = models.OneToOneField(AnnotatorLease, on_delete=models.PROTECT, related_name="review")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="review_decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=10, choices=ReviewAction.choices)
    send_back_to = models.CharField(max_length=20, choices=Stage.choices, blank=True)
    comment = models.TextField(blank=True)
    item_version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(action=ReviewAction.APPROVE) & Q(send_back_to=""))
                | (Q(action=ReviewAction.SEND_BACK) & ~Q(send_back_to="") & ~Q(send_back_to=Stage.REVIEW)
                   & ~Q(comment="")),
                name="review_send_back_has_stage_and_comment",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_action_display()} item {self.item_id} (v{self.item_version})"


class Draft(models.Model):
    """Unsaved work autosaved while typing, one per user, item and stage."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="drafts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_drafts")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    base_version = models.PositiveIntegerField(help_text="The item version the draft started from.")
    data = models.JSONField(null=True, help_text="The work as typed; null once it was saved or discarded.")
    updated_at = models.DateTimeField(auto_now=True)
    page = models.BigIntegerField(
        default=0, db_default=0,
        help_text="When the editor page whose save this is was shown (microseconds since the epoch): a save from "
                  "an older page, or from before the work was saved, is not kept (annotation.services.editing).")
    seq = models.PositiveIntegerField(default=0, db_default=0, help_text="The save's order within its page.")

    #: `seq` of a save the annotator asked for (a refused Save kept as a draft): after every autosave of its page.
    EXPLICIT_SAVE = 2**31 - 1

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "user", "stage"], name="draft_unique_user_item_stage")]

    def __str__(self) -> str:
        return f"draft {self.item} {self.user} {self.stage}"
