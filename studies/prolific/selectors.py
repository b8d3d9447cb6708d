"""Reads for Prolific: a study's connection, its submissions beside the app's attempts, the webhook log, batches."""
from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from studies.models import Attempt, AttemptStatus
from studies.prolific.models import BonusBatch, ProlificConnection, ProlificSubmission, ProlificWebhookDelivery


def connection_for(*, study_id: int) -> ProlificConnection | None:
    return ProlificConnection.objects.filter(study_id=study_id).first()


def submission_list(*, study_id: int) -> QuerySet[ProlificSubmission]:
    return (ProlificSubmission.objects.filter(connection__study_id=study_id)
            .select_related("attempt").order_by("status_at"))


def submission_counts(*, study_id: int) -> dict[str, int]:
    rows = submission_list(study_id=study_id).order_by().values("status").annotate(n=Count("id"))
    return {row["status"]: row["n"] for row in rows}


def delivery_list(*, limit: int = 200) -> QuerySet[ProlificWebhookDelivery]:
    return ProlificWebhookDelivery.objects.order_by("-received_at", "-id")[:limit]


def attempt_reports(*, study_id: int) -> QuerySet[Attempt]:
    """The attempts that ended in the app in a way Prolific must learn of (screened out, or given the time-out
    code), each with what was reported and when (nothing yet: a screen-out the worker has still to report)."""
    return (Attempt.objects.filter(study_id=study_id).exclude(external_participant_id="")
            .filter(Q(status=AttemptStatus.SCREENED_OUT) | ~Q(prolific_report=""))
            .only("id", "external_participant_id", "external_session_id", "status", "ended_at", "screened_out_reason",
                  "prolific_report", "prolific_reported_at", "prolific_report_detail").order_by("-ended_at"))


def bonus_batch_list(*, study_id: int) -> QuerySet[BonusBatch]:
    return BonusBatch.objects.filter(study_id=study_id).annotate(n_payments=Count("payments")).order_by("-created_at")
