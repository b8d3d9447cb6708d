"""Evaluation runs, one result row per (run, item, sample), and the response cache."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from evaluation.models.endpoints import ModelEndpoint
from evaluation.prompting.answer_reading import PARSE_STATUSES
from evaluation.prompting.methods import METHODS


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    FINISHED = "finished", _("Finished")
    CANCELLED = "cancelled", _("Cancelled")
    FAILED = "failed", _("Failed")


class OptionOrder(models.TextChoices):
    ORIGINAL = "original", _("Original")
    PERMUTED = "permuted", _("Permuted (seeded per item)")
    CIRCULAR = "circular", _("Circular (every rotation; right only if all are)")


class Run(models.Model):
    """One method on one endpoint over a fixed selection of items, with `samples` rows per item."""

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="runs")
    # No choices=: the method registry (evaluation.prompting.methods.METHODS) is the list, checked in clean(),
    # so a new method needs no migration.
    method = models.CharField(max_length=40, help_text="A name from the method registry, e.g. naive-3shot.")
    k = models.PositiveSmallIntegerField(default=1, help_text="Samples per answer (self-consistency, complexity-CoT).")
    # The selection, as asked for ...
    split = models.CharField(max_length=40, blank=True)
    item_status = models.CharField(max_length=20, blank=True)
    question_type = models.CharField(max_length=10, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True)
    requested_ids = models.JSONField(default=list, blank=True, help_text="Explicit item ids, if any.")
    # ... and as resolved at launch (the run always covers exactly these items, less any left out later).
    item_ids = models.JSONField(default=list, blank=True)
    left_out_ids = models.JSONField(
        default=list, blank=True,
        help_text="Rejected (deleted) items of the selection the run does not ask: left out at launch, or taken out "
                  "of item_ids by a resume or refresh before the run asked them.")
    seed = models.IntegerField(default=42)
    samples = models.PositiveSmallIntegerField(default=1)
    option_order = models.CharField(max_length=10, choices=OptionOrder.choices, default=OptionOrder.ORIGINAL)
    # Circular order (evaluation.prompting.circular): each sample is asked once per cyclic rotation of the options,
    # stored as rows sample_index = sample * rotations + rotation, so (run, item, sample_index) stays unique.
    rotations = models.PositiveSmallIntegerField(
        default=1, help_text="Rows per sample: the option rotations asked (circular order; else 1).")
    option_labels = models.CharField(max_length=10, choices=[("numbers", "1..N"), ("letters", "A..")], default="numbers")
    prompt_version = models.CharField(max_length=20, help_text="Hash of the method's prompt templates.")
    params = models.JSONField(default=dict, blank=True, help_text="Generation parameters at launch.")
    chunk_size = models.PositiveIntegerField(default=400)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="Start of the latest launch or resume.")
    finished_at = models.DateTimeField(null=True, blank=True)
    price_in_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        help_text="The endpoint's input price when the run was launched: its cost, whatever the price is later.")
    price_out_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        help_text="The endpoint's output price when the run was launched: its cost, whatever the price is later.")
    earlier_wall_s = models.FloatField(
        default=0, help_text="Seconds of the executions before the latest launch or resume, each from its start to "
                             "its end (finished, cancelled or failed); wall_s adds the latest one.")
    failure_reason = models.TextField(blank=True, help_text="Why the run failed (status failed), e.g. the endpoint down.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(samples__gte=1), name="run_samples_positive"),
            models.CheckConstraint(condition=Q(k__gte=1), name="run_k_positive"),
            models.CheckConstraint(condition=Q(rotations__gte=1), name="run_rotations_positive"),
            models.CheckConstraint(condition=Q(chunk_size__gte=1), name="run_chunk_size_positive"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.method} on {self.endpoint_id}"

    def clean(self) -> None:
        if self.method not in METHODS:
            raise ValidationError({"method": gettext("Unknown method %(name)s; choose from %(methods)s.")
                                             % {"name": repr(self.method), "methods": ", ".join(METHODS)}})

    @property
    def rows_per_item(self) -> int:
        """Result rows each item gets: samples x rotations (the rotations are 1 unless circular)."""
        return self.samples * self.rotations

    @property
    def total(self) -> int:
        return len(self.item_ids) * self.rows_per_item

    @property
    def latest_wall_s(self) -> float | None:
        """Seconds of the latest launch or resume, once it has ended."""
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    @property
    def wall_s(self) -> float | None:
        """Seconds of every execution of the run (a resumed or refreshed run counts each), once the latest ended."""
        latest = self.latest_wall_s
        return None if latest is None else latest + (self.earlier_wall_s or 0.0)

    @property
    def is_active(self) -> bool:
        return self.status in (RunStatus.QUEUED, RunStatus.RUNNING)



class Result(models.Model):
    """The outcome of one (run, item, sample). Rows are upserted, never duplicated.

    In a circular run ``sample_index`` numbers (sample, rotation) pairs: ``sample * run.rotations +
    rotation`` (evaluation.prompting.circular.split_slot); ``shown_order`` records the rotation shown as well."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="evaluation_results")
    sample_index = models.PositiveSmallIntegerField(default=0)
    item_version = models.PositiveIntegerField(
        help_text="The item's content version when it was asked (Item.content_version); another content version now = a stale row.")
    messages = models.JSONField(default=list, blank=True, help_text="Every call: the messages sent and the output.")
    raw_output = models.TextField(blank=True)
    shown_order = models.JSONField(default=list, blank=True, help_text="Original option index per shown position.")
    answer_index = models.SmallIntegerField(null=True, blank=True, help_text="0-based, in the item's original order.")
    answer_label = models.CharField(max_length=10, blank=True, help_text="The label the model wrote (as shown).")
    parse_status = models.CharField(max_length=10, blank=True)
    is_correct = models.BooleanField(null=True, blank=True)
    answer_first = models.BooleanField(default=False, help_text="The correct option was shown first.")
    free_answer = models.TextField(blank=True, help_text="Free-text answer (options hidden), for the LLM judge.")
    key_information = models.TextField(blank=True)
    keyinfo = models.FloatField(null=True, blank=True, help_text="ROUGE-L F1 against the gold key information.")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_s = models.FloatField(default=0.0)
    attempts = models.PositiveSmallIntegerField(default=0)
    cached = models.BooleanField(default=False, help_text="Every call of the row was answered from the cache.")
    error = models.TextField(blank=True)
    # What happened (each call's finish reason, tokens, cache use and failed attempts are in ``messages``).
    finish_reason = models.CharField(max_length=30, blank=True,
                                     help_text="The server's finish_reason for the output read (stop, length, ...).")
    truncated = models.BooleanField(default=False, help_text="A call of the row was cut at the token cap.")
    spent_tokens_in = models.PositiveIntegerField(
        default=0, help_text="Input tokens of calls not from the cache, every time the row was asked (a resume adds).")
    spent_tokens_out = models.PositiveIntegerField(
        default=0, help_text="Output tokens of calls not from the cache, every time the row was asked (a resume adds).")
    timeouts = models.PositiveSmallIntegerField(
        default=0, help_text="Attempts that timed out (the server may have kept generating them: abandoned), every "
                             "time the row was asked.")
    error_class = models.CharField(max_length=30, blank=True, help_text="e.g. connection_refused, timeout, http_401.")
    failed_call = models.CharField(max_length=40, blank=True, help_text="The call (stage) that failed, e.g. mr-3.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run_id", "item_id", "sample_index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item", "sample_index"], name="result_unique_run_item_sample"),
            models.CheckConstraint(
                condition=Q(parse_status__in=["", *PARSE_STATUSES]), name="result_parse_status_valid"
            ),
            models.CheckConstraint(condition=Q(item_version__gte=1), name="result_item_version_positive"),
        ]
        indexes = [
            # Covering index of the metrics of many runs at once (evaluation.selectors.aggregates, the leaderboard, the
            # run list): PostgreSQL reads these narrow columns from the index, never the wide rows.
            models.Index(fields=["run"], name="result_run_scores",
                         include=["item", "item_version", "sample_index", "is_correct", "answer_first",
                                  "parse_status", "error", "keyinfo", "tokens_in", "tokens_out", "updated_at"]),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} item {self.item_id} #{self.sample_index}"


class SupersededResult(models.Model):
    """A result row replaced by a refresh (``services.run_refresh``): its item's content changed after the run
    asked it, so the run asked the item again and this is the old answer, kept whole (nothing is deleted).

    ``row`` is every field of the old row as it was (its ``id`` included: judge labels name it as
    ``result:<id>``); the columns beside it are the ones to filter on."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="superseded_results")
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="superseded_results")
    sample_index = models.PositiveSmallIntegerField()
    item_version = models.PositiveIntegerField(help_text="The content version the old row answered.")
    result_id = models.PositiveIntegerField(help_text="The old row's id (judge labels name it result:<id>).")
    is_correct = models.BooleanField(null=True, blank=True)
    row = models.JSONField(encoder=DjangoJSONEncoder, help_text="Every field of the old row.")
    superseded_at = models.DateTimeField(auto_now_add=True)
    superseded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+")

    class Meta:
        ordering = ["run_id", "item_id", "sample_index", "superseded_at"]
        constraints = [
            models.UniqueConstraint(fields=["result_id"], name="superseded_result_unique_result"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} item {self.item_id} #{self.sample_index} v{self.item_version} (superseded)"


class CachedResponse(models.Model):
    """A stored model response, keyed by a hash of (base URL, model, messages, parameters, sample key)."""

    key = models.CharField(max_length=64, primary_key=True)
    model = models.CharField(max_length=200)
    text = models.TextField()
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    finish_reason = models.CharField(max_length=30, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"
