"""The periodic sweep closes expired attempts through a real Celery worker, with no browser left."""
import time
from datetime import timedelta

from django.utils import timezone

from detectbench_web.celery import app
from studies.models import Attempt, AttemptStatus, ParticipantLeaseStatus, StudyItem, StudyStatus
from studies.services import study_create
from studies.tasks import sweep_expired_attempts

from .conftest import import_items, started_attempt


def test_sweep_is_on_the_beat_schedule():
    entry = app.conf.beat_schedule["studies-sweep-expired-attempts"]
    assert entry["task"] == "studies.tasks.sweep_expired_attempts" and entry["schedule"] <= 60


def test_deadline_passes_with_the_browser_closed_and_the_worker_sweeps(celery_worker, detectbench_dir):
    ids = import_items(detectbench_dir, 6)
    study = study_create(slug="sweep", item_ids=ids, per_participant=3, raters=1, time_limit_seconds=10,
                         grace_seconds=1, status=StudyStatus.OPEN)
    gone = started_attempt(study, "closed-browser")
    running = started_attempt(study, "still-here")
    # Well before its deadline whenever the worker sweeps (its 10 s would pass on a slow machine).
    Attempt.objects.filter(pk=running.pk).update(deadline=timezone.now() + timedelta(hours=1))
    Attempt.objects.filter(pk=gone.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    sweep_expired_attempts.delay()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        gone.refresh_from_db()
        if gone.status == AttemptStatus.EXPIRED:
            break
        time.sleep(0.2)
    assert gone.status == AttemptStatus.EXPIRED, celery_worker.log.read_text()[-2000:]
    assert not gone.leases.filter(status=ParticipantLeaseStatus.ACTIVE).exists()
    running.refresh_from_db()
    assert running.status == AttemptStatus.STARTED
    assert sum(StudyItem.objects.filter(study=study).values_list("load", flat=True)) == 3
