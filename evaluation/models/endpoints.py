"""Model endpoints: where answers come from (the key itself is never stored, only its variable)."""
from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from evaluation.model_calls.builtin_models import BUILTIN_MODELS
from evaluation.model_calls.credentials import (
    key_variable_problem,
    params_credentials,
    params_without_credentials,
    url_credentials,
    url_without_credentials,
)
from evaluation.model_calls.destinations import DestinationPolicy, DestinationRefused, check_url_without_lookup
from evaluation.prompting.methods import METHODS

MAX_CONCURRENCY = 1024
#: Where a credential goes instead of a URL or the extra parameters (every refusal says so).
KEY_VARIABLE_HINT = ("Put the key in an environment variable of the workers and give that variable's NAME in the "
                     "API key variable field (api_key_env), e.g. OPENAI_API_KEY.")


def destination_policy() -> DestinationPolicy:
    """Where endpoints may point, from the settings (EVALUATION_ENDPOINT_RESTRICTED / _ALLOWED_NETWORKS);
    ImproperlyConfigured naming a network that is none (checked when the app starts: EvaluationConfig.ready)."""
    networks = getattr(settings, "EVALUATION_ENDPOINT_ALLOWED_NETWORKS", ())
    try:
        return DestinationPolicy.of(restricted=getattr(settings, "EVALUATION_ENDPOINT_RESTRICTED", not settings.DEBUG),
                                    allowed=networks)
    except ValueError as error:
        raise ImproperlyConfigured(f"EVALUATION_ENDPOINT_ALLOWED_NETWORKS: {error} (give comma-separated networks "
                                   "such as 127.0.0.0/8,10.0.5.17/32)") from None


#: How the settings modules read an environment variable: os.environ.get("X"), env_bool("X"), env_list("X")...
_READS_VARIABLE = re.compile(r"""(?:environ\.get|environ\.setdefault|environ\[|env_bool|env_list)\(?\s*["']([A-Z][A-Z0-9_]*)["']""")


@functools.lru_cache(maxsize=1)
def _settings_variables(settings_module: str) -> frozenset[str]:
    """Every environment variable the settings package of ``settings_module`` reads (from its modules' source)."""
    try:
        spec = importlib.util.find_spec(settings_module)
    except (ImportError, ValueError):
        return frozenset()
    if spec is None or not spec.origin:
        return frozenset()
    return frozenset(name for module in Path(spec.origin).resolve().parent.glob("*.py")
                     for name in _READS_VARIABLE.findall(module.read_text(encoding="utf-8")))


def app_variable_names() -> frozenset[str]:
    """The app's settings and every environment variable its settings read (SECRET_KEY, DATABASE_URL, VAR_DIR,
    DEBUG...): never an endpoint's key variable, whose value a worker sends to a model server."""
    names = {name for name in dir(settings) if name.isupper()}
    # and the variables settings name for the app's own secrets (PROLIFIC_WEBHOOK_SECRET_ENV = "PROLIFIC_...")
    named = {value for name in names if name.endswith("_ENV") and isinstance(value := getattr(settings, name), str)}
    module = getattr(settings, "SETTINGS_MODULE", None) or os.environ.get("DJANGO_SETTINGS_MODULE", "")  # overridden
    return frozenset(names | named | (_settings_variables(module) if module else frozenset()))


def key_variable_error(name: str) -> str | None:
    """Why ``name`` cannot be an endpoint's API-key variable (the message never repeats a pasted key), or None."""
    problem = key_variable_problem(name, pattern=settings.EVALUATION_API_KEY_ENV_PATTERN,
                                   app_names=app_variable_names())
    return problem[1] if problem else None


def base_url_error(base_url: str) -> str | None:
    """Why ``base_url`` cannot be stored: a credential in it, or an address endpoints may not reach."""
    where = url_credentials(base_url)
    if where:
        return f"No credentials in the base URL ({'; '.join(where)}): it is stored and shown. {KEY_VARIABLE_HINT}"
    try:
        check_url_without_lookup(base_url, destination_policy())
    except DestinationRefused as refused:
        return (f"Endpoints may not point at {refused.host}: it is a {refused.kind.replace('_', '-')} address. "
                "Endpoints reach public addresses, and the networks listed in EVALUATION_ENDPOINT_ALLOWED_NETWORKS "
                "(e.g. 127.0.0.0/8 for a model server on this machine).")
    return None

# Paper Table 9 (the inference parameters of the experiments), as far as an OpenAI-compatible API takes them.
TABLE9_PRESET = {"temperature": 0.95, "top_p": 0.95, "max_tokens": 2000, "seed": 42}
#: Table 9's top_k, sent as extra body to servers that take it (vLLM, llama.cpp, Ollama; not api.openai.com).
#: Its num_beams = 2 has no OpenAI-API equivalent and is not sent.
TABLE9_EXTRA = {"top_k": 5}


class EndpointKind(models.TextChoices):
    OPENAI = "openai", _("OpenAI-compatible API")
    BUILTIN = "builtin", _("Built-in offline model")


class ModelEndpoint(models.Model):
    """Where answers come from. The API key is never stored: only the name of the env variable that holds it."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=EndpointKind.choices, default=EndpointKind.OPENAI)
    base_url = models.URLField(max_length=300, blank=True, help_text=_("e.g. https://api.openai.com/v1 or http://localhost:8000/v1"))
    model = models.CharField(max_length=200, help_text=_("Model name, or random / first-option / lexical for built-ins."))
    api_key_env = models.CharField(
        max_length=100, blank=True,
        help_text=_("Name of the environment variable that holds the API key (the key itself is never stored)."),
    )
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    seed = models.IntegerField(null=True, blank=True)
    extra_params = models.JSONField(default=dict, blank=True, help_text=_('Sent as extra body, e.g. {"top_k": 5}.'))
    max_concurrency = models.PositiveIntegerField(default=8, help_text=_("Requests in flight at once, over all workers."))
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    timeout_s = models.FloatField(default=120.0)
    max_attempts = models.PositiveSmallIntegerField(default=6, validators=[MinValueValidator(1)])
    retry_budget_s = models.FloatField(default=600.0, help_text=_("Give a request up after this many seconds of retries."))
    price_in_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True,
                                            validators=[MinValueValidator(0)],
                                            help_text=_("Price per million input tokens."))
    price_out_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True,
                                             validators=[MinValueValidator(0)],
                                             help_text=_("Price per million output tokens."))
    use_cache = models.BooleanField(default=True, help_text=_("Reuse stored responses to identical requests."))
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
    def shown_base_url(self) -> str:
        """The base URL as pages and the API show it: never a credential (one stored before they were refused)."""
        return url_without_credentials(self.base_url) if self.base_url else ""

    @property
    def shown_extra_params(self):
        """The extra parameters as pages and the API show them: never a credential."""
        return params_without_credentials(self.extra_params)

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
        # No message repeats a refused value: it may be a key pasted by mistake.
        if self.api_key_env and (problem := key_variable_error(self.api_key_env)):
            errors["api_key_env"] = problem
        if self.base_url and (problem := base_url_error(self.base_url)):
            errors["base_url"] = problem
        if not isinstance(self.extra_params, dict):
            errors["extra_params"] = 'Give a JSON object, e.g. {"top_k": 5}.'
        elif where := params_credentials(self.extra_params):
            errors["extra_params"] = (f"No credentials in the extra parameters ({', '.join(where[:5])}): they are "
                                      f"stored and shown. {KEY_VARIABLE_HINT}")
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
