"""A screen-out in the app reported to Prolific once, by the worker (`studies.tasks.report_screen_out`).

The attempt's row is held while Prolific is called and the answer recorded, so that two runs of the task (a
retry, a redelivery) never both call: the second finds the report recorded and does nothing. A call that reached
Prolific but whose answer was lost is retried; Prolific then refuses the submission (it is screened out already),
and the submission's status at Prolific settles it.
"""
from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from studies.models import Attempt, AttemptStatus, ProlificReport
from studies.prolific.errors import ProlificRefused
from studies.prolific.models import SubmissionStatus
from studies.prolific.services.connections import connection_of, prolific_client


@transaction.atomic
def screen_out_report(*, attempt_id: int) -> Attempt:
    """Tell Prolific that the attempt's submission is screened out (its SESSION_ID is the submission id); records
    what was reported and when. ProlificUnavailable propagates (the task retries); a refusal is recorded."""
    attempt = Attempt.objects.select_for_update().get(pk=attempt_id)
    if (attempt.status != AttemptStatus.SCREENED_OUT or not attempt.external_session_id
            or attempt.prolific_report == ProlificReport.SCREENED_OUT):
        return attempt
    connection = connection_of(attempt.study_id)
    submission_id = attempt.external_session_id
    with prolific_client(connection) as client:
        try:
            client.screen_out_submissions(connection.prolific_study_id, [submission_id])
            report, detail = ProlificReport.SCREENED_OUT, f"submission {submission_id}"
        except ProlificRefused as refusal:
            at_prolific = {str(s.get("id")): str(s.get("status", ""))
                           for s in client.submissions(connection.prolific_study_id)}
            if at_prolific.get(submission_id) == SubmissionStatus.SCREENED_OUT:  # an earlier call went through
                report, detail = ProlificReport.SCREENED_OUT, f"submission {submission_id} (found screened out)"
            else:
                report, detail = ProlificReport.SCREEN_OUT_REFUSED, refusal.message
    attempt.prolific_report, attempt.prolific_report_detail = report, detail[:300]
    attempt.prolific_reported_at = timezone.now()
    attempt.save(update_fields=["prolific_report", "prolific_report_detail", "prolific_reported_at"])
    return attempt


def screen_outs_unreported(*, older_than_s: int = 60) -> list[int]:
    """Screened-out attempts of connected studies with nothing reported a while after the screen-out (their
    report was never queued, or gave up): the periodic task queues them again. Refused ones are not retried."""
    return list(Attempt.objects.filter(
        status=AttemptStatus.SCREENED_OUT, prolific_report="", study__prolific__isnull=False,
        ended_at__lt=timezone.now() - timedelta(seconds=older_than_s)).exclude(external_session_id="")
        .values_list("pk", flat=True))
