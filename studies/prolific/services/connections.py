"""A study's Prolific connection, its test, and approvals/rejections of submissions with Prolific's rules."""
from __future__ import annotations

import os
import re

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from studies.models import Study
from studies.prolific.client import ProlificClient
from studies.prolific.errors import ProlificNotConnected, SubmissionReviewRefused
from studies.prolific.models import ProlificConnection, ProlificSubmission, SubmissionStatus

#: A token variable must say it is Prolific's, so that a connection cannot name the app's own secrets.
TOKEN_ENV_RE = re.compile(r"^PROLIFIC_[A-Z0-9_]{1,90}$")
REJECTION_CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER"}


def prolific_client(connection: ProlificConnection) -> ProlificClient:
    """A client with the token read now from the variable the connection names (ProlificNotConnected if unset)."""
    token = os.environ.get(connection.token_env, "")
    if not token:
        raise ProlificNotConnected(gettext("The environment variable %(name)s holds no Prolific API token.")
                                   % {"name": connection.token_env},
                                   field="token_env")
    return ProlificClient(token=token, base_url=settings.PROLIFIC_API_URL, timeout_s=settings.PROLIFIC_API_TIMEOUT_S)


def connection_of(study_id: int) -> ProlificConnection:
    connection = ProlificConnection.objects.filter(study_id=study_id).first()
    if connection is None:
        raise ProlificNotConnected(gettext("This study has no Prolific connection."), field="prolific_study_id")
    return connection


@transaction.atomic
def connection_set(*, study_id: int, prolific_study_id: str, token_env: str) -> ProlificConnection:
    """Name the study's Prolific study and the variable holding the token (never the token itself)."""
    prolific_study_id, token_env = prolific_study_id.strip(), token_env.strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", prolific_study_id):
        raise ProlificNotConnected(gettext("A Prolific study id: letters, digits, - and _ (up to 64)."),
                                   field="prolific_study_id")
    if not TOKEN_ENV_RE.match(token_env):
        raise ProlificNotConnected(gettext("The NAME of the variable holding the token, starting with PROLIFIC_ "
                                           "(e.g. PROLIFIC_API_TOKEN), never the token itself."), field="token_env")
    taken = ProlificConnection.objects.filter(prolific_study_id=prolific_study_id).exclude(study_id=study_id)
    if taken.exists():
        raise ProlificNotConnected(gettext("Another study is connected to this Prolific study."),
                                   field="prolific_study_id")
    Study.objects.select_for_update().get(pk=study_id)
    connection, _ = ProlificConnection.objects.update_or_create(
        study_id=study_id, defaults={"prolific_study_id": prolific_study_id, "token_env": token_env,
                                     "checked_at": None, "check_message": ""})
    return connection


def connection_test(*, study_id: int) -> ProlificConnection:
    """Ask Prolific for the study: records its status and places, or raises what went wrong (and records it)."""
    connection = connection_of(study_id)
    try:
        with prolific_client(connection) as client:
            study = client.study(connection.prolific_study_id)
    except Exception as error:
        ProlificConnection.objects.filter(pk=connection.pk).update(check_message=str(error)[:300], checked_at=None)
        raise
    connection.prolific_status = str(study.get("status", ""))[:40]
    places = study.get("total_available_places")
    connection.places = places if isinstance(places, int) and places >= 0 else None
    connection.checked_at = timezone.now()
    connection.check_message = f"Connected: {study.get('name', '')}"[:300]
    connection.save(update_fields=["prolific_status", "places", "checked_at", "check_message", "updated_at"])
    return connection


def _submission_for_review(study_id: int, submission_id: str) -> tuple[ProlificConnection, ProlificSubmission]:
    connection = connection_of(study_id)
    submission = ProlificSubmission.objects.filter(submission_id=submission_id).first()
    if submission is None or (submission.connection_id not in (None, connection.pk)):
        raise SubmissionReviewRefused(gettext("No such submission in this study."), field="submission_id")
    return connection, submission


def submission_approve(*, study_id: int, submission_id: str, user=None) -> ProlificSubmission:
    """Approve on Prolific; only a submission awaiting review (Prolific refuses a TIMED-OUT one, and so do we)."""
    connection, submission = _submission_for_review(study_id, submission_id)
    if submission.status != SubmissionStatus.AWAITING_REVIEW:
        raise SubmissionReviewRefused(
            gettext("Only a submission awaiting review can be approved; this one is %(status)s.")
            % {"status": submission.status}, field="action")
    with prolific_client(connection) as client:
        client.submission_transition(submission_id, "APPROVE")
    return _reviewed(submission, SubmissionStatus.APPROVED, "", user)


def submission_reject(*, study_id: int, submission_id: str, message: str, category: str, user=None
                      ) -> ProlificSubmission:
    """Reject on Prolific: a reason for the participant (100 characters at least, as Prolific asks) and a category."""
    connection, submission = _submission_for_review(study_id, submission_id)
    message = (message or "").strip()
    if len(message) < 100:
        raise SubmissionReviewRefused(gettext("A rejection needs a reason for the participant of at least 100 "
                                              "characters."),
                                      field="message")
    if category not in REJECTION_CATEGORIES:
        raise SubmissionReviewRefused(gettext("The rejection category is one of %(categories)s.")
                                      % {"categories": ", ".join(sorted(REJECTION_CATEGORIES))},
                                      field="category")
    if submission.status != SubmissionStatus.AWAITING_REVIEW:
        raise SubmissionReviewRefused(
            gettext("Only a submission awaiting review can be rejected; this one is %(status)s.")
            % {"status": submission.status}, field="action")
    with prolific_client(connection) as client:
        client.submission_transition(submission_id, "REJECT", message=message, rejection_category=category)
    return _reviewed(submission, SubmissionStatus.REJECTED, message, user)


@transaction.atomic
def _reviewed(submission: ProlificSubmission, status: str, message: str, user) -> ProlificSubmission:
    submission = ProlificSubmission.objects.select_for_update().get(pk=submission.pk)
    now = timezone.now()
    submission.status, submission.review_message = status, message
    submission.reviewed_by = user if getattr(user, "pk", None) else None
    submission.reviewed_at = submission.status_at = max(now, submission.status_at)
    submission.save(update_fields=["status", "review_message", "reviewed_by", "reviewed_at", "status_at"])
    return submission
