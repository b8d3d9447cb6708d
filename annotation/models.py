"""The dataset: items (DetectBench records) and their append-only revision history."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from .item_facts import QUESTION_TYPES


class ItemStatus(models.TextChoices):
    IMPORTED = "imported", "Imported"
    VERIFICATION = "verification", "Question verification"
    REWRITE = "rewrite", "Question rewriting"
    CLUE_GRAPH = "clue_graph", "Clue-graph construction"
    REVIEW = "review", "Review"
    PUBLISHED = "published", "Published"
    REJECTED = "rejected", "Rejected"


class QuestionType(models.TextChoices):
    HOW = "how"
    WHAT = "what"
    WHICH = "which"
    WHO = "who"
    WHY = "why"
    WHEN = "when"
    WHERE = "where"
    OTHER = "other"


assert tuple(QuestionType.values) == QUESTION_TYPES

# The fields that make up an item's content: a change to any of them is a new revision.
CONTENT_FIELDS = ("context", "question", "options", "answer_index", "evidence", "reasoning", "translations", "extra")


class Item(models.Model):
    """One detective puzzle in the official DetectBench schema plus curation state."""

    source = models.CharField(max_length=100, help_text="Where the item comes from, e.g. detectbench-v1.3.")
    external_id = models.CharField(max_length=100, help_text="The record's `id` in its source file.")
    external_id_is_int = models.BooleanField(default=True, help_text="Export the id as a JSON number.")
    split = models.CharField(max_length=40, db_index=True)
    context = models.TextField()
    question = models.TextField()
    options = models.JSONField(help_text="A list of at least two option strings.")
    answer_index = models.PositiveSmallIntegerField(help_text="0-based index of the correct option.")
    evidence = models.TextField(blank=True, help_text="clue_graph.evidence: `clue -> implication` lines.")
    reasoning = models.TextField(blank=True, help_text="clue_graph.multi_hop_reasoning: `A + B -> C` lines.")
    translations = models.JSONField(
        default=dict, blank=True,
        help_text='Per language code: {"context": ..., "question": ..., "options": [...]}.',
    )
    extra = models.JSONField(default=dict, blank=True, help_text="Unknown record fields, kept for export.")
    status = models.CharField(max_length=20, choices=ItemStatus.choices, default=ItemStatus.IMPORTED, db_index=True)
    version = models.PositiveIntegerField(default=1, help_text="Optimistic-locking counter, +1 on every edit.")

    # Derived, for analysis (recomputed by services whenever content changes).
    question_type = models.CharField(max_length=10, choices=QuestionType.choices, db_index=True)
    context_words = models.PositiveIntegerField(default=0)
    context_tokens = models.PositiveIntegerField(default=0)
    evidence_count = models.PositiveIntegerField(default=0)
    reasoning_steps = models.PositiveIntegerField(default=0)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["source", "split", "id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], name="item_unique_source_external_id"),
            models.CheckConstraint(condition=Q(version__gte=1), name="item_version_positive"),
        ]
        indexes = [models.Index(fields=["split", "status"])]

    def __str__(self) -> str:
        return f"{self.source}#{self.external_id}"

    @property
    def answer_text(self) -> str:
        return self.options[self.answer_index]

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not isinstance(self.options, list) or len(self.options) < 2:
            errors["options"] = "Options must be a list of at least two strings."
        elif not all(isinstance(o, str) and o.strip() for o in self.options):
            errors["options"] = "Every option must be a non-empty string."
        elif len({o.strip() for o in self.options}) != len(self.options):
            errors["options"] = "Options must be distinct."
        elif self.answer_index is not None and not 0 <= self.answer_index < len(self.options):
            errors["answer_index"] = f"Answer index must be between 0 and {len(self.options) - 1}."
        if errors:
            raise ValidationError(errors)

    def content(self) -> dict:
        """The item's content fields as plain data (the revision snapshot)."""
        return {name: getattr(self, name) for name in CONTENT_FIELDS}

    def to_record(self) -> dict:
        """The item in the official DetectBench JSONL schema."""
        record = {
            "id": int(self.external_id) if self.external_id_is_int else self.external_id,
            "context": self.context,
            "question": self.question,
            "options": list(self.options),
            "answer": self.answer_index,
            "clue_graph": {"evidence": self.evidence, "multi_hop_reasoning": self.reasoning},
        }
        record.update(self.extra or {})
        return record


class ItemRevision(models.Model):
    """Append-only snapshot of an item after each change: who, when, in which stage, why."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField(help_text="Equals the item's version after this change.")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)
    stage = models.CharField(max_length=20, choices=ItemStatus.choices)
    note = models.TextField(blank=True)
    changed_fields = models.JSONField(default=list, blank=True)
    snapshot = models.JSONField(help_text="The item's content fields after this change.")

    class Meta:
        ordering = ["item_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["item", "number"], name="item_revision_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.item} r{self.number}"

    def save(self, *args, **kwargs):
        # Revisions are history: refuse to rewrite one that exists.
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("ItemRevision is append-only; create a new revision instead.")
        super().save(*args, **kwargs)


# --------------------------------------------------------------------------
# Curation workflow (paper §3.1, appendix Table 7): stages, leases, decisions, drafts.


class Stage(models.TextChoices):
    """The stages in which annotators work on an item (a subset of ItemStatus)."""

    VERIFICATION = "verification", "Question verification"
    REWRITE = "rewrite", "Question rewriting"
    CLUE_GRAPH = "clue_graph", "Clue-graph construction"
    REVIEW = "review", "Review"


#: The stage that follows each stage when it is completed.
NEXT_STATUS = {
    Stage.VERIFICATION: ItemStatus.REWRITE,
    Stage.REWRITE: ItemStatus.CLUE_GRAPH,
    Stage.CLUE_GRAPH: ItemStatus.REVIEW,
    Stage.REVIEW: ItemStatus.PUBLISHED,
}


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


class AssignmentStatus(models.TextChoices):
    LEASED = "leased", "Leased"
    SUBMITTED = "submitted", "Submitted"
    RELEASED = "released", "Released"  # given back or expired: the slot is free again
    SUPERSEDED = "superseded", "Superseded"  # the item was sent back to this stage: start afresh


class Assignment(models.Model):
    """One annotator's slot on an item in a stage: a lease while working, then submitted."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="assignments")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=12, choices=AssignmentStatus.choices, default=AssignmentStatus.LEASED)
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-leased_at"]
        constraints = [
            # One live slot per annotator per item-stage: nobody counts twice towards k.
            models.UniqueConstraint(
                fields=["item", "stage", "annotator"],
                condition=Q(status__in=["leased", "submitted"]),
                name="assignment_one_live_slot_per_annotator",
            ),
            models.CheckConstraint(condition=Q(expires_at__gte=models.F("leased_at")), name="assignment_expiry_after_lease"),
            models.CheckConstraint(
                condition=~Q(status="submitted") | Q(submitted_at__isnull=False), name="assignment_submitted_has_time"),
        ]
        indexes = [models.Index(fields=["stage", "status", "expires_at"]), models.Index(fields=["annotator", "status"])]

    def __str__(self) -> str:
        return f"{self.item} {self.stage} {self.annotator} ({self.status})"


class Criterion(models.TextChoices):
    """Table 7, question verification: delete the item if any of these holds."""

    NEEDS_MEDIA = "needs_media", "1.1 Needs non-text information (images, audio)"
    HEAVY_MATH = "heavy_math", "1.2 Heavy mathematics or domain knowledge"
    NO_DAILY_SCENARIO = "no_daily_scenario", "1.3 No ample daily scenario"
    WRONG_ANSWER = "wrong_answer", "1.4 The answer is not correct"
    BIAS = "bias", "1.5 Discrimination or bias (gender, race, nation, religion)"


CRITERIA = tuple(Criterion.values)


class Decision(models.TextChoices):
    KEEP = "keep", "Keep"
    DELETE = "delete", "Delete"


class VerificationDecision(models.Model):
    """One annotator's verdict on an item in the verification stage."""

    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="verification")
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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "created_at"]
        constraints = [
            # Delete needs a reason (a Table-7 criterion); keep means no criterion applies.
            models.CheckConstraint(
                condition=(Q(decision="keep") & Q(needs_media=False, heavy_math=False, no_daily_scenario=False,
                                                   wrong_answer=False, bias=False))
                | (Q(decision="delete") & (Q(needs_media=True) | Q(heavy_math=True) | Q(no_daily_scenario=True)
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
    OPEN = "open", "Open"
    RESOLVED = "resolved", "Resolved"


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
            models.UniqueConstraint(fields=["item", "stage"], condition=Q(status="open"),
                                    name="adjudication_one_open_per_item_stage"),
            models.CheckConstraint(condition=Q(status="open") | ~Q(decision=""), name="adjudication_resolved_has_decision"),
        ]

    def __str__(self) -> str:
        return f"{self.item} {self.stage} ({self.status})"


class ReviewAction(models.TextChoices):
    APPROVE = "approve", "Approve and publish"
    SEND_BACK = "send_back", "Send back"


class ReviewDecision(models.Model):
    """A second annotator's review: approve (publish) or send back to a stage with a comment."""

    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="review")
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
                condition=(Q(action="approve") & Q(send_back_to=""))
                | (Q(action="send_back") & ~Q(send_back_to="") & ~Q(send_back_to="review") & ~Q(comment="")),
                name="review_send_back_has_stage_and_comment",
            ),
        ]


class Draft(models.Model):
    """Unsaved work autosaved while typing, one per user, item and stage."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="drafts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotation_drafts")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    base_version = models.PositiveIntegerField(help_text="The item version the draft started from.")
    data = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "user", "stage"], name="draft_unique_user_item_stage")]

    def __str__(self) -> str:
        return f"draft {self.item} {self.user} {self.stage}"
