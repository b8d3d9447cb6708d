"""The one error contract: every service refuses a call by raising a `ServiceError`.

A `ServiceError` carries a machine-readable `code`, a message for people, an optional
`field` it belongs to and the HTTP status a view or API answers with. Apps subclass it
(`annotation.errors`, `studies.errors`, `evaluation.errors`); `error_mapping` turns any of
them (and Django's `ValidationError`) into form errors for pages and into DRF responses,
so a refused call is never a 500.

Pure Python: no Django import here.
"""
from __future__ import annotations

from typing import Any

from foundation.words import gettext


class ServiceError(Exception):
    """A refused service call."""

    code = "refused"
    http_status = 400

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None,
                 http_status: int | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if http_status is not None:
            self.http_status = http_status
        self.field = field
        self.details = dict(details or {})

    def as_dict(self) -> dict[str, Any]:
        """The JSON body an API answers with."""
        body: dict[str, Any] = {"code": self.code, "detail": self.message}
        if self.field:
            body["field"] = self.field
        body.update(self.details)
        return body


class Invalid(ServiceError):
    """The input is wrong (400). `errors` maps field name -> messages when there are several."""

    code = "invalid"
    http_status = 400

    def __init__(self, message: str = "", *, errors: dict[str, list[str]] | None = None, **kwargs):
        self.errors = {k: list(v) for k, v in (errors or {}).items()}
        if not message:
            message = "; ".join(f"{k}: {' '.join(v)}" if k else " ".join(v) for k, v in self.errors.items())
        super().__init__(message or gettext("invalid input"), **kwargs)

    def as_dict(self) -> dict[str, Any]:
        body = super().as_dict()
        if self.errors:
            body["errors"] = self.errors
        return body


class NotFound(ServiceError):
    code = "not_found"
    http_status = 404


class Forbidden(ServiceError):
    code = "forbidden"
    http_status = 403


class Conflict(ServiceError):
    """The call does not fit the current state (out of turn, already taken, stale)."""

    code = "conflict"
    http_status = 409
