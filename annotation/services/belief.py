"""Belief labels, writes: the judge records its labels here (the only way in), researchers set
a queue's review policy, and the final label of a target follows from its reviews.

Hand-outs and reviews are in `belief_review`; the hand-out policy itself is the pure
`annotation.review_order`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from annotation.models import (
    BeliefLabel,
    BeliefQueue,
    BeliefReview,
    Item,
    LabelSource,
    LabelStatus,
    LabelTask,
    ReviewOrder,
)
from annotation.models.belief import new_audit_key
from foundation.errors import Invalid, NotFound
from foundation.words import gettext

#: The fields of a row given to `belief_labels_record`: the contract with the judge (evaluation.execution.judge builds
#: the rows; README, "The LLM judge").
ROW_FIELDS = ("item_id", "item_version", "task", "target", "aspect", "label", "choices", "payload", "belief",
              "belief_source", "status", "rationale", "raw_output", "prompt_hash", "producer", "tokens", "latency_ms")
REQUIRED_ROW_FIELDS = ("item_id", "item_version", "task", "target", "aspect", "belief_source", "status")
ROW_DEFAULTS: dict[str, Any] = {"label": "", "choices": [], "payload": {}, "belief": None, "rationale": "",
                                "raw_output": "", "prompt_hash": "", "producer": "", "tokens": None,
                                "latency_ms": None}
POLICY_FIELDS = ("description", "order", "random_share", "reviewers_per_label", "blind", "accept_threshold",
                 "lease_minutes", "target_half_width")
BATCH = 500


def _policy_errors(values: dict) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if "order" in values and values["order"] not in ReviewOrder.values:
        errors["order"] = [gettext("One of %(orders)s.", orders=", ".join(ReviewOrder.values))]
    if "random_share" in values and not (isinstance(values["random_share"], (int, float))
                                         and 0 <= values["random_share"] <= 1):
        errors["random_share"] = [gettext("A share between 0 and 1.")]
    if "reviewers_per_label" in values and not (isinstance(values["reviewers_per_label"], int)
                                                and values["reviewers_per_label"] >= 1):
        errors["reviewers_per_label"] = [gettext("At least 1 reviewer per label.")]
    threshold = values.get("accept_threshold")
    if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
        errors["accept_threshold"] = [gettext("Empty, or a belief between 0 and 1.")]
    target = values.get("target_half_width")
    if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 0.5):
        errors["target_half_width"] = [gettext("Empty (no target), or a half-width above 0 and below 0.5.")]
    if "lease_minutes" in values and not (isinstance(values["lease_minutes"], int) and values["lease_minutes"] >= 1):
        errors["lease_minutes"] = [gettext("At least 1 minute.")]
    return errors


def belief_queue_for(*, name: str, **defaults) -> BeliefQueue:
    """The review queue called `name` (one per judge config), created with `defaults` if new."""
    if not name or slugify(name) != name or len(name) > 64:
        raise Invalid(gettext("A queue name is a slug (letters, digits, - and _), at most 64 characters."), field="name")
    unknown = set(defaults) - set(POLICY_FIELDS)
    if unknown:
        raise Invalid(gettext("Unknown queue settings: %(names)s.", names=", ".join(sorted(unknown))))
    errors = _policy_errors(defaults)
    if errors:
        raise Invalid(errors=errors)
    queue, _ = BeliefQueue.objects.get_or_create(name=name, defaults=defaults)
    return queue


@transaction.atomic
def belief_queue_policy_set(*, queue_id: int, **policy) -> BeliefQueue:
    """Change a queue's review policy (order, random share, k, blind, threshold, lease time).

    Reviews already made keep what they were; the sampling design stays valid because every
    hand-out records its stream.
    """
    queue = BeliefQueue.objects.select_for_update().filter(pk=queue_id).first()
    if queue is None:
        raise NotFound(gettext("No review queue %(id)s.", id=queue_id))
    unknown = set(policy) - set(POLICY_FIELDS)
    if unknown:
        raise Invalid(gettext("Unknown queue settings: %(names)s.", names=", ".join(sorted(unknown))))
    errors = _policy_errors(policy)
    if errors:
        raise Invalid(errors=errors)
    for field, value in policy.items():
        setattr(queue, field, value)
    queue.save(update_fields=list(policy) or None)
    return queue


def _row_error(index: int, message: str) -> Invalid:
    return Invalid(gettext("Row %(index)s: %(problem)s", index=index, problem=message))


def _clean_row(index: int, row: dict) -> dict:
    unknown = set(row) - set(ROW_FIELDS)
    if unknown:
        raise _row_error(index, gettext("unknown fields %(names)s", names=sorted(unknown)))
    missing = [f for f in REQUIRED_ROW_FIELDS if row.get(f) in (None, "")]
    if missing:
        raise _row_error(index, gettext("missing %(names)s", names=missing))
    clean = {**ROW_DEFAULTS, **row}
    if clean["task"] not in LabelTask.values:
        raise _row_error(index, gettext("task is one of %(values)s", values=LabelTask.values))
    if clean["status"] not in LabelStatus.values:
        raise _row_error(index, gettext("status is one of %(values)s", values=LabelStatus.values))
    belief = clean["belief"]
    if belief is not None and not (isinstance(belief, (int, float)) and 0 <= belief <= 1):
        raise _row_error(index, gettext("belief is between 0 and 1"))
    if clean["status"] == LabelStatus.SCORED and (belief is None or not clean["label"]):
        raise _row_error(index, gettext("a scored label has a label and a belief"))
    choices = clean["choices"]
    if not isinstance(choices, list) or not all(isinstance(c, str) and c for c in choices):
        raise _row_error(index, gettext("choices is a list of labels"))
    if clean["status"] == LabelStatus.SCORED and choices and clean["label"] not in choices:
        raise _row_error(index, gettext("label %(label)s is not one of the choices %(choices)s", label=repr(clean["label"]),
                                             choices=choices))
    for field, limit in (("target", 64), ("aspect", 32), ("label", 64), ("belief_source", 20), ("prompt_hash", 20),
                         ("producer", 64)):
        if not isinstance(clean[field], str) or len(clean[field]) > limit:
            raise _row_error(index, gettext("%(field)s is text of at most %(n)s characters", field=field, n=limit))
    for field in ("item_version", "tokens", "latency_ms"):
        value = clean[field]
        if value is not None and (not isinstance(value, int) or value < (1 if field == "item_version" else 0)):
            raise _row_error(index, gettext("%(field)s is a whole number", field=field))
    if not isinstance(clean["payload"], dict):
        raise _row_error(index, gettext("payload is an object"))
    return clean


INSERT_COLUMNS = ("queue", *[f.removesuffix("_id") for f in ROW_FIELDS], "final_label", "final_source", "audit_key",
                  "tie_key", "first_stream", "created_at")


def _insert_ignoring_conflicts(rows: list[dict]) -> int:
    """INSERT ... ON CONFLICT (queue, target, aspect, item_version) DO NOTHING; the number inserted."""
    fields = [BeliefLabel._meta.get_field(name) for name in INSERT_COLUMNS]
    table = connection.ops.quote_name(BeliefLabel._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    key = ", ".join(connection.ops.quote_name(BeliefLabel._meta.get_field(n).column)
                    for n in ("queue", "target", "aspect", "item_version"))
    inserted = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            batch = rows[start:start + BATCH]
            placeholders = ", ".join("(" + ", ".join(["%s"] * len(fields)) + ")" for _ in batch)
            params = [f.get_db_prep_save(row[f.attname], connection) for row in batch for f in fields]
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {placeholders} "
                           f"ON CONFLICT ({key}) DO NOTHING RETURNING {connection.ops.quote_name('id')}", params)
            inserted += len(cursor.fetchall())
    return inserted


@transaction.atomic
def belief_labels_record(*, queue: BeliefQueue, rows: Iterable[dict]) -> int:
    """Record the judge's labels; a label that exists for (queue, target, aspect, item_version)
    is kept as it is (exact resume). Returns how many rows were inserted."""
    cleaned = [_clean_row(i, dict(row)) for i, row in enumerate(rows)]
    if not cleaned:
        return 0
    item_ids = {row["item_id"] for row in cleaned}
    missing = item_ids - set(Item.objects.filter(pk__in=item_ids).values_list("pk", flat=True))
    if missing:
        raise Invalid(gettext("unknown items %(ids)s", ids=sorted(missing)[:10]), field="item_id")
    now = timezone.now()
    prepared = [{**row, "queue_id": queue.pk, "final_label": "", "final_source": "", "audit_key": new_audit_key(),
                 "tie_key": new_audit_key(), "first_stream": "", "created_at": now} for row in cleaned]
    return _insert_ignoring_conflicts(prepared)


def final_from_reviews(label: BeliefLabel, human_labels: list[str]) -> tuple[str, str]:
    """The final label of reviews in the order given: the most frequent, ties to the one given
    first; and its provenance relative to the judge's label."""
    counts = Counter(human_labels)
    top = max(counts.values())
    final = next(h for h in human_labels if counts[h] == top)
    if label.status != LabelStatus.SCORED:
        return final, LabelSource.HUMAN_ONLY
    return final, LabelSource.JUDGE_ACCEPTED if final == label.label else LabelSource.JUDGE_OVERRIDDEN


def label_finalize(label: BeliefLabel, *, reviewers_required: int) -> BeliefLabel:
    """Set the final label once the label has its k reviews (recomputed with every later review)."""
    human_labels = list(BeliefReview.objects.filter(label=label).order_by("created_at", "id")
                        .values_list("human_label", flat=True))
    if len(human_labels) < reviewers_required:
        return label
    label.final_label, label.final_source = final_from_reviews(label, human_labels)
    BeliefLabel.objects.filter(pk=label.pk).update(final_label=label.final_label, final_source=label.final_source)
    return label
