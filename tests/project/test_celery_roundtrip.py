"""A real Celery worker, against the real Redis broker, runs a task that writes to the database."""
import json
import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import AnnotatorLease, AnnotatorLeaseStatus, Item, Stage
from annotation.tasks import leases_expire_sweep
from tests.support.items import import_text


@pytest.mark.django_db(transaction=True)
def test_worker_round_trips_a_task_that_writes(celery_worker):
    import_text(json.dumps({
        "id": 1, "context": "One two three four.", "question": "Why?", "options": ["a", "b"], "answer": 0,
        "clue_graph": {"evidence": "x -> y", "multi_hop_reasoning": "y -> a"}}) + "\n",
        file_name="f.jsonl", source="c", split="dev")
    user = get_user_model().objects.create_user("sweeper")
    now = timezone.now()
    lease = AnnotatorLease.objects.create(item=Item.objects.get(), stage=Stage.VERIFICATION, annotator=user,
                                          leased_at=now - timedelta(hours=2), expires_at=now - timedelta(hours=1))

    leases_expire_sweep.delay()

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lease.refresh_from_db()
        if lease.status != AnnotatorLeaseStatus.LEASED:
            break
        time.sleep(0.2)
    assert lease.status == AnnotatorLeaseStatus.RELEASED
    assert "leases_expire_sweep" in celery_worker.log.read_text()
