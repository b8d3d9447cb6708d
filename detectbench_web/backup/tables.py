"""Which tables a backup holds, in which order, and how one row becomes one JSON line and back.

Every model of the backed-up apps is backed up unless `EXCLUDED` names it with a reason; a model
of any other app must be named in `EXCLUDED`, otherwise `backed_up_models()` refuses to run
(and the test fails), so a new table is never left out silently.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import json
import uuid

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import models

#: Apps whose every table is backed up (but those in EXCLUDED).
BACKED_UP_APPS = ("auth", "annotation", "studies", "evaluation")

#: Tables left out of a backup, each with the reason.
EXCLUDED = {
    "auth.permission": "created by `migrate` from the code; rows that point at a permission store its natural key",
    "contenttypes.contenttype": "created by `migrate` from the code (no backed-up row points at one)",
    "sessions.session": "logins and participants' browser sessions are transient; an attempt resumes by its token",
    "admin.logentry": "the admin's change log, not curation or study data (it points at content types by id)",
    "authtoken.token": "API tokens are credentials: researchers create new ones after a restore",
    "axes.accessattempt": "login-failure counters of the lockout: transient security state",
    "axes.accessfailurelog": "log of failed logins for the lockout: transient security state",
    "axes.accesslog": "log of logins for the lockout: transient security state",
    "axes.accessattemptexpiration": "expiry times of the lockout's failure counters: transient security state",
    "evaluation.cachedresponse": "a cache of model responses, rebuilt on demand; each result keeps its own output",
}

#: Tables that migrations fill (the role groups, the stage settings): a restore replaces their rows.
SEEDED = ("auth.group", "auth.group_permissions", "annotation.stageconfig")

#: Models that other rows point at by natural key, because `migrate` numbers them differently per database.
NATURAL_KEY_MODELS = ("auth.permission", "contenttypes.contenttype")

#: The user's password hash: written only when asked for (`export_all --with-password-hashes`).
PASSWORD_FIELD = ("auth.user", "password")


def _label(model) -> str:
    return model._meta.label_lower


def backed_up_models(*, excluded: dict[str, str] = EXCLUDED) -> list[type[models.Model]]:
    """The backed-up models, each after the models it points at (ties by label: a stable order)."""
    chosen, undecided = {}, []
    for model in apps.get_models(include_auto_created=True):
        label = _label(model)
        if label in excluded or model._meta.proxy:  # a proxy model's rows are its concrete model's
            continue
        if model._meta.app_label not in BACKED_UP_APPS:
            undecided.append(label)
            continue
        if model._meta.parents or not model._meta.managed:
            raise ImproperlyConfigured(f"backup: {label} inherits from another model (not supported)"
                                       if model._meta.parents else f"backup: {label} is not managed by Django")
        chosen[label] = model
    if undecided:
        raise ImproperlyConfigured(
            "backup: no decision for " + ", ".join(sorted(undecided))
            + " (back the app up in BACKED_UP_APPS or name each model in EXCLUDED with a reason, "
              "detectbench_web/backup/tables.py)")
    stale = [label for label in excluded if not _model_exists(label)]
    if stale:
        raise ImproperlyConfigured(f"backup: EXCLUDED names models that no longer exist: {', '.join(stale)}")
    return _dependency_order(chosen)


def _model_exists(label: str) -> bool:
    app_label, _, name = label.partition(".")
    try:
        apps.get_model(app_label, name)
    except LookupError:
        return False
    return True


def _dependency_order(chosen: dict[str, type[models.Model]]) -> list[type[models.Model]]:
    needs = {label: {_label(f.related_model) for f in model._meta.concrete_fields
                     if f.is_relation and _label(f.related_model) in chosen and f.related_model is not model}
             for label, model in chosen.items()}
    ordered: list[str] = []
    while needs:
        ready = sorted(label for label, wanted in needs.items() if wanted <= set(ordered))
        if not ready:
            raise ImproperlyConfigured(f"backup: foreign keys form a cycle among {sorted(needs)}")
        ordered.append(ready[0])
        del needs[ready[0]]
    return [chosen[label] for label in ordered]


def file_name(model) -> str:
    return f"{_label(model)}.jsonl"


def columns(model, *, with_passwords: bool) -> list[models.Field]:
    """The fields written for each row of `model`, in the table's column order."""
    return [f for f in model._meta.concrete_fields
            if with_passwords or (_label(model), f.name) != PASSWORD_FIELD]


def keyed_by_natural_key(field: models.Field) -> bool:
    return field.is_relation and _label(field.related_model) in NATURAL_KEY_MODELS


def natural_keys(model) -> dict:
    """pk -> natural key (a list) of every row of `model`."""
    return {obj.pk: list(obj.natural_key()) for obj in model._base_manager.all()}


_PLAIN = frozenset({bool, int, float, str, list, dict})


def encode_value(value):
    """A value read from the database as JSON (exact: full microseconds, decimals as text)."""
    if value is None or type(value) in _PLAIN or isinstance(value, (bool, int, float, str, list, dict)):
        return value
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC)
        return value.isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"backup: no JSON form for a {type(value).__name__}")


def decode_value(field: models.Field, value):
    """The Python value to store for `field` from its JSON form (the inverse of encode_value)."""
    if value is None:
        return None
    if isinstance(field, models.JSONField):
        return value
    if isinstance(field, models.BinaryField):
        return base64.b64decode(value)
    if isinstance(field, models.DurationField):
        return datetime.timedelta(seconds=value)
    if isinstance(field, models.FloatField) and isinstance(value, str):
        raise ValueError("a number is expected")
    return field.to_python(value)


def dump_line(row: dict) -> bytes:
    """One row as one line: keys sorted, no spaces, UTF-8; equal rows give equal bytes."""
    return (json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
