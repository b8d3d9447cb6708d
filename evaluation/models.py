"""Model endpoints, evaluation runs, one result row per (run, item, sample), and the response cache."""
from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from .baselines import BUILTIN_MODELS
from .judge.models import JudgeConfig, JudgeRun  # noqa: F401 - the judge's models: Django finds them here
from .methods import METHODS
from .parsing import PARSE_STATUSES

# Upper case only: a lower-case "name" such as gsk_abc123... is far more likely a pasted key than a variable.
ENV_VAR_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
#: The app's own secrets and connection strings: never sent to a model server as its API key.
APP_SECRET_VARIABLES = re.compile(r"^(SECRET_KEY|DJANGO_.*|DATABASE_.*|REDIS_.*|CELERY_.*|PG[A-Z]*|POSTGRES_.*"
                                  r"|AWS_SECRET_.*|EMAIL_HOST_PASSWORD)$")
MAX_CONCURRENCY = 1024
SECRET_PARAM_RE = re.compile(r"api[_-]?key|secret|password|authorization|bearer|access[_-]?token", re.IGNORECASE)

# Paper Table 9 (the inference parameters of the experiments), as far as an OpenAI-compatible API takes them.
TABLE9_PRESET = {"temperature": 0.95, "top_p": 0.95, "max_tokens": 2000, "seed": 42}
#: Table 9's top_k, sent as extra body to servers that take it (vLLM, llama.cpp, Ollama; not api.openai.com).
#: Its num_beams = 2 has no OpenAI-API equivalent and is not sent.
TABLE9_EXTRA = {"top_k": 5}


class EndpointKind(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible API"
    BUILTIN = "builtin", "Built-in offline model"


class ModelEndpoint(models.Model):
    """Where answers come from. The API key is never stored: only the name of the env variable that holds it."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=EndpointKind.choices, default=EndpointKind.OPENAI)
    base_url = models.URLField(max_length=300, blank=True, help_text="e.g. https://api.openai.com/v1 or http://localhost:8000/v1")
    model = models.CharField(max_length=200, help_text="Model name, or random / first-option / lexical for built-ins.")
    api_key_env = models.CharField(
        max_length=100, blank=True,
        help_text="Name of the environment variable that holds the API key (the key itself is never stored).",
    )
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    seed = models.IntegerField(null=True, blank=True)
    extra_params = models.JSONField(default=dict, blank=True, help_text='Sent as extra body, e.g. {"top_k": 5}.')
    max_concurrency = models.PositiveIntegerField(default=8, help_text="Requests in flight at once, over all workers.")
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    timeout_s = models.FloatField(default=120.0)
    max_attempts = models.PositiveSmallIntegerField(default=6)
    retry_budget_s = models.FloatField(default=600.0, help_text="Give a request up after this many seconds of retries.")
    price_in_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True,
                                            help_text="Price per million input tokens.")
    price_out_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True,
                                             help_text="Price per million output tokens.")
    use_cache = models.BooleanField(default=True, help_text="Reuse stored responses to identical requests.")
    created_at = models.DateTimeField(auto_now_add=True)
    #: Raised by one on every save: an edit made from an older version is refused (no lost update).
    version = models.PositiveIntegerField(default=1, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(max_concurrency__gte=1), name="endpoint_concurrency_positive"),
            models.CheckConstraint(condition=Q(timeout_s__gt=0), name="endpoint_timeout_positive"),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="endpoint_attempts_positive"),
            models.CheckConstraint(
                condition=~Q(kind="openai") | ~Q(base_url=""), name="endpoint_openai_needs_base_url"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self._state.adding:
            super().save(*args, **kwargs)
            return
        # Raised in the UPDATE itself (version = version + 1), so that two saves never write the same number.
        before = self.version
        self.version = F("version") + 1
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "version"}
        try:
            super().save(*args, **kwargs)
        except BaseException:
            self.version = before
            raise
        self.refresh_from_db(fields=["version"])

    @property
    def is_builtin(self) -> bool:
        return self.kind == EndpointKind.BUILTIN

    def generation_params(self) -> dict:
        params = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens, "seed": self.seed}
        params = {k: v for k, v in params.items() if v is not None}
        if self.extra_params:
            params["extra_body"] = dict(self.extra_params)
        return params

    def params_for(self, method: str) -> dict:
        """The generation parameters a run of ``method`` sends: the endpoint's, and the method's default
        ``max_tokens`` when the endpoint sets none (never unlimited; built-in models take no parameters)."""
        params = self.generation_params()
        if not self.is_builtin and params.get("max_tokens") is None and method in METHODS:
            params["max_tokens"] = METHODS[method].default_max_tokens
        return params

    def clean(self) -> None:
        errors = {}
        if self.api_key_env and not ENV_VAR_RE.match(self.api_key_env):
            # The message never repeats the value: it may be a key pasted by mistake.
            errors["api_key_env"] = ("Give the NAME of an environment variable (upper-case letters, digits, _), "
                                     "not the key itself.")
        elif self.api_key_env and APP_SECRET_VARIABLES.match(self.api_key_env):
            errors["api_key_env"] = (f"{self.api_key_env} holds one of the app's own secrets or connection settings; "
                                     "it is never sent to a model server. Use a variable of its own, e.g. "
                                     "OPENAI_API_KEY.")
        if not isinstance(self.extra_params, dict):
            errors["extra_params"] = 'Give a JSON object, e.g. {"top_k": 5}.'
        elif any(SECRET_PARAM_RE.search(str(name)) for name in self.extra_params):
            errors["extra_params"] = "No credentials here: they would be stored and shown. Use the key variable."
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            errors["temperature"] = "Temperature must be between 0 and 2."
        if self.top_p is not None and not 0 < self.top_p <= 1:
            errors["top_p"] = "top_p must be in (0, 1]."
        if self.max_concurrency is not None and not 1 <= self.max_concurrency <= MAX_CONCURRENCY:
            errors["max_concurrency"] = f"Between 1 and {MAX_CONCURRENCY} requests in flight."
        if self.requests_per_minute is not None and self.requests_per_minute < 1:
            errors["requests_per_minute"] = "At least 1 request per minute (leave empty for no limit)."
        if self.timeout_s is not None and self.timeout_s <= 0:
            errors["timeout_s"] = "The timeout must be positive."
        if self.retry_budget_s is not None and self.retry_budget_s <= 0:
            errors["retry_budget_s"] = "The retry budget must be positive."
        if self.kind == EndpointKind.BUILTIN and self.model not in BUILTIN_MODELS:
            errors["model"] = f"Built-in models: {', '.join(BUILTIN_MODELS)}."
        if self.kind == EndpointKind.OPENAI and not self.base_url:
            errors["base_url"] = "An OpenAI-compatible endpoint needs a base URL."
        if errors:
            raise ValidationError(errors)


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


class OptionOrder(models.TextChoices):
    ORIGINAL = "original", "Original"
    PERMUTED = "permuted", "Permuted (seeded per item)"
    CIRCULAR = "circular", "Circular (every rotation; right only if all are)"


class Run(models.Model):
    """One method on one endpoint over a fixed selection of items, with `samples` rows per item."""

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="runs")
    # No choices=: the method registry (evaluation.methods.METHODS) is the list, checked in clean(),
    # so a new method needs no migration.
    method = models.CharField(max_length=40, help_text="A name from the method registry, e.g. naive-3shot.")
    k = models.PositiveSmallIntegerField(default=1, help_text="Samples per answer (self-consistency, complexity-CoT).")
    # The selection, as asked for ...
    split = models.CharField(max_length=40, blank=True)
    item_status = models.CharField(max_length=20, blank=True)
    question_type = models.CharField(max_length=10, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True)
    requested_ids = models.JSONField(default=list, blank=True, help_text="Explicit item ids, if any.")
    # ... and as resolved at launch (the run always covers exactly these items).
    item_ids = models.JSONField(default=list, blank=True)
    seed = models.IntegerField(default=42)
    samples = models.PositiveSmallIntegerField(default=1)
    option_order = models.CharField(max_length=10, choices=OptionOrder.choices, default=OptionOrder.ORIGINAL)
    # Circular order (evaluation.circular): each sample is asked once per cyclic rotation of the options,
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
            raise ValidationError({"method": f"Unknown method {self.method!r}; choose from {', '.join(METHODS)}."})

    @property
    def rows_per_item(self) -> int:
        """Result rows each item gets: samples x rotations (the rotations are 1 unless circular)."""
        return self.samples * self.rotations

    @property
    def total(self) -> int:
        return len(self.item_ids) * self.rows_per_item

    @property
    def wall_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    @property
    def is_active(self) -> bool:
        return self.status in (RunStatus.QUEUED, RunStatus.RUNNING)

    def record_counts(self) -> dict:
        """What happened in this run: truncated / cached / errored rows, tokens actually spent, abandoned
        requests and the commonest error (``evaluation.run_record.run_record_counts``)."""
        from .run_record import run_record_counts

        return run_record_counts(run=self)


class Result(models.Model):
    """The outcome of one (run, item, sample). Rows are upserted, never duplicated.

    In a circular run ``sample_index`` numbers (sample, rotation) pairs: ``sample * run.rotations +
    rotation`` (evaluation.circular.split_slot); ``shown_order`` records the rotation shown as well."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="evaluation_results")
    sample_index = models.PositiveSmallIntegerField(default=0)
    item_version = models.PositiveIntegerField(
        help_text="The item's version when it was asked (Item.version); another version now = a stale row.")
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
    spent_tokens_in = models.PositiveIntegerField(default=0, help_text="Input tokens of calls not from the cache.")
    spent_tokens_out = models.PositiveIntegerField(default=0, help_text="Output tokens of calls not from the cache.")
    timeouts = models.PositiveSmallIntegerField(
        default=0, help_text="Attempts that timed out (the server may have kept generating them: abandoned).")
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
            # Covering index of the metrics of many runs at once (evaluation.aggregates, the leaderboard, the
            # run list): PostgreSQL reads these narrow columns from the index, never the wide rows.
            models.Index(fields=["run"], name="result_run_scores",
                         include=["item", "item_version", "sample_index", "is_correct", "answer_first",
                                  "parse_status", "error", "keyinfo", "tokens_in", "tokens_out", "updated_at"]),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} item {self.item_id} #{self.sample_index}"


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
