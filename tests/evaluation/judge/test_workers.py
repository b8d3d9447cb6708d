"""Judge runs through real Celery worker processes (Redis broker, PostgreSQL, the stand-in judge server)."""
import json
import signal
from collections import Counter

import pytest
from django.db.models import Count

from annotation.models import BeliefLabel
from evaluation.models import RunStatus
from evaluation.services import judge as services
from evaluation.tasks import judge_run_execute
from foundation.errors import Conflict
from tests.conftest import start_celery_worker, subprocess_env
from tests.evaluation.test_tasks import wait_for
from tests.support.judge_server import JudgeServer, judge_endpoint, verdict_reply

pytestmark = pytest.mark.django_db(transaction=True)

REPLY = verdict_reply("incorrect", [("incorrect", -0.3), ("correct", -1.6)])


def finished(judge_run):
    judge_run.refresh_from_db()
    return judge_run.status == RunStatus.FINISHED


def assert_exactly_one_label_per_target(judge_run, config):
    judge_run.refresh_from_db()
    labels = BeliefLabel.objects.filter(queue=config.queue)
    assert not labels.values("target", "aspect", "item_version").annotate(c=Count("pk")).filter(c__gt=1).exists()
    assert set(labels.values_list("target", flat=True)) == set(judge_run.targets)


def test_a_judge_run_on_a_worker(free_text_run, celery_worker):
    with JudgeServer(script=lambda request: REPLY, latency_s=0.01) as server:
        config = services.judge_config_create(name="worker-judge", task="free-text", belief_source="logprob",
                                              endpoint=judge_endpoint(server, use_cache=False))
        judge_run = services.judge_run_launch(config=config, run=free_text_run)
        wait_for(lambda: finished(judge_run), 60, "the judge run to finish")
    assert (judge_run.scored, judge_run.errors, judge_run.label_counts) == (judge_run.n, 0, {"incorrect": judge_run.n})
    assert judge_run.wall_s is not None and "evaluation.tasks.judge_run_execute" in celery_worker.log.read_text()
    assert_exactly_one_label_per_target(judge_run, config)


def _asked(server) -> Counter:
    """How many times the stand-in was asked about each target (a target's prompt is its own)."""
    return Counter(json.dumps(request["messages"], sort_keys=True) for request in server.requests)


def test_a_killed_judge_run_heals_by_itself_resume_is_refused_while_it_runs_and_nothing_is_asked_twice(
        free_text_run, tmp_path):
    """One execution path: a judge run beats like a model run's chunk and is alone. Resume while it runs is
    refused; its worker SIGKILLed, it finishes without Resume on another worker (the reconciliation), with one
    label per target, and only the requests in flight at the kill asked again."""
    env = subprocess_env(EVALUATION_LIMITER_LEASE_S="1", EVALUATION_CHUNK_HEARTBEAT_S="0.5",
                         EVALUATION_RECONCILE_INTERVAL_S="1", EVALUATION_RECONCILE_GRACE_S="1")
    worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
    try:
        with JudgeServer(script=lambda request: REPLY, latency_s=0.25) as server:
            config = services.judge_config_create(name="killed-judge", task="free-text", belief_source="logprob",
                                                  endpoint=judge_endpoint(server, max_concurrency=2, use_cache=False))
            judge_run = services.judge_run_launch(config=config, run=free_text_run)
            wait_for(lambda: BeliefLabel.objects.filter(queue=config.queue).count() >= 4, 60, "some labels")
            with pytest.raises(Conflict, match="is running"):
                services.judge_run_resume(judge_run=judge_run)
            worker.stop(signal.SIGKILL)
            written = BeliefLabel.objects.filter(queue=config.queue).count()
            assert written < judge_run.n
            judge_run.refresh_from_db()
            assert judge_run.status == RunStatus.RUNNING

            worker = start_celery_worker(tmp_path, pool="solo", concurrency=1, env=env)
            wait_for(lambda: finished(judge_run), 90, "the judge run to heal and finish without Resume")
            asked = _asked(server)
            assert len(asked) == judge_run.n
            again = sum(1 for n in asked.values() if n > 1)
            # Only what was in flight at the kill (the endpoint's limit, 2) or being written asked again, once.
            assert max(asked.values()) <= 2 and again <= 3, asked
            # A late copy of the task (the killed worker's message coming back) asks nothing.
            before = len(server.requests)
            judge_run_execute.apply(args=(judge_run.pk,))
            assert len(server.requests) == before
    finally:
        worker.stop()
    assert_exactly_one_label_per_target(judge_run, config)
    assert (judge_run.scored, judge_run.errors) == (judge_run.n, 0)
