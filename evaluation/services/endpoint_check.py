"""Test an endpoint's connection before it is saved: the check a launch makes (``preflight.check_endpoint``:
it answers and serves the model), for the settings typed in the endpoint's form.

As at a launch, the key is the workers' (this web process may not hold it): a key variable not set here, and a
401/403 to a check made without it, are warnings; a refused address reads as an unreachable one (the check is no
port scanner)."""
from __future__ import annotations

from evaluation.model_calls import preflight
from evaluation.models import EndpointKind
from evaluation.models.endpoints import destination_policy
from evaluation.services.runs import LAUNCH_CHECK_TIMEOUT_S
from foundation.errors import Invalid
from foundation.words import gettext


def endpoint_connection_check(*, kind: str, base_url: str, model: str, api_key_env: str = "",
                              timeout_s: float | None = None) -> preflight.Preflight:
    """What the check found (how it checked, the models served, warnings); PreflightRefused saying why the endpoint
    cannot serve a run; Invalid when there is nothing to check yet (no base URL or no model)."""
    if kind == EndpointKind.BUILTIN:
        return preflight.Preflight(checked="builtin")
    if not base_url:
        raise Invalid(gettext("Give the base URL to test."), field="base_url")
    if not model:
        raise Invalid(gettext("Give the model to test."), field="model")
    timeout = min(timeout_s or LAUNCH_CHECK_TIMEOUT_S, LAUNCH_CHECK_TIMEOUT_S)
    try:
        return preflight.check_endpoint(base_url=base_url, model=model, api_key_env=api_key_env, timeout_s=timeout,
                                        key_elsewhere=True, policy=destination_policy())
    except preflight.PreflightRefused:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a strange endpoint makes the client raise is its refusal
        raise preflight.PreflightRefused(gettext("cannot ask %(url)s: %(error)s", url=base_url, error=type(exc).__name__),
                                         error_class="connection")
