"""Reads for the home page: what each role has waiting, composed from each app's selectors.

The project package is the one place that reads all three apps (annotation does not
know studies or evaluation); each number comes from its app's selector or, where
an app has none for it, from the smallest query on its models.
"""
from __future__ import annotations

from django.db.models import Count

from annotation import selectors as annotation_selectors
from annotation.models import LabelStatus
from evaluation.models import RunStatus
from evaluation.selectors import runs as evaluation_selectors
from foundation.roles import is_annotator, is_researcher
from studies.models import AttemptStatus, Response, StudyStatus
from studies.selectors.monitor import study_list


def _open_studies() -> list:
    """Open studies with their pool, attempts and fill (answers given of pool size x raters; a screened-out
    participant's answers do not fill it)."""
    studies = list(study_list().filter(status=StudyStatus.OPEN))
    answers = dict(Response.objects.filter(attempt__study__in=studies)
                   .exclude(attempt__status=AttemptStatus.SCREENED_OUT).values_list("attempt__study")
                   .annotate(n=Count("id")).values_list("attempt__study", "n"))
    for study in studies:
        study.n_answers = answers.get(study.pk, 0)
        study.answers_wanted = study.n_items * study.raters
        study.fill_percent = round(100 * study.n_answers / study.answers_wanted) if study.answers_wanted else 0
    return studies


def _active_runs() -> list:
    """Queued and running model runs (and judge runs), each with its progress."""
    runs = evaluation_selectors.run_queryset().filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
    return evaluation_selectors.with_progress(list(runs))


def _labels_waiting() -> int:
    """Judge labels without a final (reviewed) value, as the review queues count them."""
    return (annotation_selectors.belief_labels().exclude(status=LabelStatus.ERROR).filter(final_source="")
            .count())


def home_dashboard(*, user) -> dict:
    """The home page's numbers for the user's roles (an empty dict for a user without a role)."""
    board: dict = {}
    if is_annotator(user):
        board["queue"] = annotation_selectors.queue_overview(user=user)
        board["labels_waiting"] = _labels_waiting()
    if is_researcher(user):
        board["curation"] = annotation_selectors.curation_counts()
        board["studies"] = _open_studies()
        board["runs"] = _active_runs()
    return board
