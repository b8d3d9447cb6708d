"""Reads for studies: the exports (JSON and CSV rows). Every lease, answer and refused answer is exported, those
of screened-out attempts too, marked: their `attempt_status` is "screened_out" and their `lease_status` "screened"
(their answers are counted nowhere else). A lease row also carries the highlight draft of its question
(`draft_highlights`: the passages marked before the answer was sent, or on a question never answered) and when it was
last saved.

Each row says whether its item is still as the participant saw it, as the evaluation's exports do: `current_version`
(the item's content version now), `stale` (the content changed since `item_version`), `item_state` (current, stale
or deleted: how the results count the row, `studies.selectors.item_states`) and `changed_fields` (the content
fields changed since `item_version`); `quota_given_back` marks an answer on an earlier content whose place in the
item's quota was given back for the item to be asked again at its current content (studies.services.reasking)."""
from __future__ import annotations

import json
from collections.abc import Iterator

from annotation.models import ItemStatus
from annotation.selectors.versions import item_contents_at
from studies.models import Attempt, ParticipantLease, RefusedAnswer, Study
from studies.selectors.item_states import DELETED, ItemState, item_states


def study_export(study: Study) -> dict:
    """The JSON export: the study's settings, every attempt, and every lease, answer and refused answer."""
    return {
        "study": {"slug": study.slug, "title": study.title, "per_participant": study.per_participant,
                  "raters": study.raters, "time_limit_seconds": study.time_limit_seconds,
                  "language": study.language, "seed": study.seed},
        "attempts": study_attempts_export(study),
        "rows": list(study_export_rows(study)),
    }


# --------------------------------------------------------------------------- exports

EXPORT_FIELDS = [
    "record", "study", "attempt_id", "participant_id", "external_study_id", "session_id", "attempt_status",
    "attempt_started_at", "attempt_deadline", "attempt_ended_at", "position", "item_id", "item_source",
    "item_external_id", "item_version", "current_version", "stale", "item_state", "changed_fields", "lease_status",
    "quota_given_back", "chosen_option", "correct_option", "is_correct", "confidence", "highlights",
    "language", "shown_at", "answered_at", "seconds", "is_late", "refused_reason", "received_at", "draft_highlights",
    "draft_saved_at",
]
#: The columns that hold a list of passages: JSON text in a CSV cell.
JSON_COLUMNS = ("highlights", "draft_highlights", "changed_fields")


def study_export_rows(study: Study) -> Iterator[dict]:
    """One row per lease (answered or not, including unfinished attempts), then one per refused answer.

    `item_version` is the item's content version the row is about (the answer's, else the one the question was last
    shown at, else the current one for a question never shown) and `correct_option` the key at that version: like
    for like, a row is never compared with a key its participant did not see."""
    leases = list(
        ParticipantLease.objects.filter(attempt__study=study)
        .select_related("attempt", "item", "response")
        .only("id", "position", "status", "quota_given_back", "shown_at", "shown_content_version", "draft_highlights", "draft_saved_at",
              "item__id", "item__source", "item__external_id", "item__content_version", "item__status", "attempt__id",
              "attempt__external_participant_id", "attempt__external_study_id",
              "attempt__external_session_id", "attempt__status", "attempt__language", "attempt__started_at", "attempt__deadline",
              "attempt__ended_at", "response__id", "response__chosen_option", "response__is_correct",
              "response__confidence", "response__highlights", "response__language", "response__shown_at",
              "response__answered_at", "response__is_late", "response__item_version")
        .order_by("attempt_id", "position")
    )
    version_of = {lease.pk: _version(lease) for lease in leases}
    keys = item_contents_at(((lease.item_id, version) for lease, version in zip(leases, version_of.values())),
                            fields=("answer_index",))
    refused_rows = list(RefusedAnswer.objects.filter(attempt__study=study).select_related("attempt", "item")
                        .order_by("pk"))
    states = item_states({(lease.item_id, version_of[lease.pk]) for lease in leases}
                         | {(r.item_id, _payload_version(r)) for r in refused_rows
                            if r.item_id is not None and _payload_version(r) is not None},
                         items={**{r.item_id: r.item for r in refused_rows if r.item_id is not None},
                                **{lease.item_id: lease.item for lease in leases}})
    for lease in leases:
        a, item = lease.attempt, lease.item
        r = getattr(lease, "response", None)
        version = version_of[lease.pk]
        yield {
            **_attempt_fields(study, a),
            "record": "response" if r else "lease",
            "position": lease.position + 1, "item_id": item.pk, "item_source": item.source,
            "item_external_id": item.external_id, "item_version": version, **_state_fields(states, item.pk, version),
            "lease_status": lease.status, "quota_given_back": lease.quota_given_back,
            "chosen_option": r.chosen_option if r else None,
            "correct_option": (keys.get((item.pk, version)) or {}).get("answer_index"),
            "is_correct": r.is_correct if r else None, "confidence": r.confidence if r else None,
            "highlights": r.highlights if r else [], "language": r.language if r else study.language_of(a.language),
            "shown_at": _iso(r.shown_at if r else lease.shown_at), "answered_at": _iso(r.answered_at) if r else None,
            "seconds": round(r.seconds, 3) if r else None, "is_late": r.is_late if r else None,
            "refused_reason": None, "received_at": None,
            "draft_highlights": lease.draft_highlights or [], "draft_saved_at": _iso(lease.draft_saved_at),
        }
    for refused in refused_rows:
        item = refused.item
        yield {
            **{name: None for name in EXPORT_FIELDS},
            **_attempt_fields(study, refused.attempt),
            "record": "refused", "item_id": item.pk if item else None,
            "item_source": item.source if item else None, "item_external_id": item.external_id if item else None,
            "chosen_option": refused.payload.get("chosen_option"), "highlights": refused.payload.get("highlights") or [],
            "confidence": refused.payload.get("confidence"), "item_version": refused.payload.get("item_version"),
            "refused_reason": refused.reason, "received_at": _iso(refused.received_at), "draft_highlights": [],
            **_refused_state_fields(states, item, _payload_version(refused)),
        }


def _state_fields(states: dict[tuple[int, int | None], ItemState], item_id: int, version: int | None) -> dict:
    found = states[(item_id, version)]
    return {"current_version": found.current_version, "stale": found.stale, "item_state": found.state,
            "changed_fields": found.changed_fields}


def _refused_state_fields(states: dict[tuple[int, int | None], ItemState], item, version: int | None) -> dict:
    """A refused answer's item as it is now; whether it is stale only when its payload named a version."""
    if item is None:
        return {"changed_fields": []}
    if version is None:
        return {"current_version": item.content_version, "changed_fields": [],
                "item_state": DELETED if item.status == ItemStatus.REJECTED else None}
    return _state_fields(states, item.pk, version)


def _payload_version(refused: RefusedAnswer) -> int | None:
    """The content version a refused answer's page was about, when its payload holds one (it is as sent)."""
    version = refused.payload.get("item_version")
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def _version(lease: ParticipantLease) -> int:
    response = getattr(lease, "response", None)
    if response is not None:
        return response.item_version
    return lease.shown_content_version or lease.item.content_version


def csv_row(row: dict) -> dict:
    """An export row as CSV cells (written through foundation.csv_safety): the passage lists as JSON text."""
    return {**row, **{name: json.dumps(row.get(name) or [], ensure_ascii=False) for name in JSON_COLUMNS}}


def study_attempts_export(study: Study) -> list[dict]:
    """Every attempt (also those that never started or found the study full), for the JSON export."""
    return [
        {**_attempt_fields(study, a), "joined_at": _iso(a.joined_at)}
        for a in study.attempts.order_by("joined_at")
    ]


def _attempt_fields(study: Study, a: Attempt) -> dict:
    return {
        "study": study.slug, "attempt_id": a.pk, "participant_id": a.external_participant_id,
        "external_study_id": a.external_study_id, "session_id": a.external_session_id,
        "attempt_status": a.status, "attempt_started_at": _iso(a.started_at),
        "attempt_deadline": _iso(a.deadline), "attempt_ended_at": _iso(a.ended_at),
    }


def _iso(value) -> str | None:
    return value.isoformat() if value else None
