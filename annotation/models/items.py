"""The item store: items (DetectBench records) and their append-only revision history."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from annotation.item_facts import QUESTION_TYPES
from annotation.models.stages import ItemStatus


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
#: The largest version (or revision) number there can be: the database's integer columns (Item.version,
#: ItemRevision.number, Draft.base_version, ...) hold no more. Forms take version numbers up to it, so a larger one is
#: refused as input instead of failing in the database.
MAX_VERSION = 2**31 - 1


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
    content_version = models.PositiveIntegerField(
        default=1, help_text="Names the content (context, question, options, answer, clue graph, translations): "
                             "changes only with it, never with a status, a stage or a review; a content the item had "
                             "before takes its version again, a new one a version above all. Results, responses and "
                             "judge labels record it.")
    highest_content_version = models.PositiveIntegerField(
        default=1, help_text="The highest content version the item has had: above 1, its rows may be at a version "
                             "other than its content's now (also when a revert took it back to 1).")

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
            models.CheckConstraint(condition=Q(content_version__gte=1) & Q(content_version__lte=F("version")),
                                   name="item_content_version_positive_and_at_most_version"),
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
    content_version = models.PositiveIntegerField(default=1, help_text="The item's content version after this change.")
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
