"""A position probe launched as a researcher launches it (the quality card's POST) runs on a real Celery worker
through the judge runs' task, against the stand-in judge server; its labels are the probe's, not the queue's."""
import pytest
from django.urls import reverse

from annotation.models import BeliefLabel
from evaluation.models import JudgeProbeLabel, JudgeRun, RunStatus
from evaluation.services import judge as services
from tests.annotation.workflow_support import client_for
from tests.support.judge_server import JudgeServer, judge_endpoint, verdict_reply
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

REPLY = verdict_reply("correct", [("correct", -0.2), ("incorrect", -1.7)])


def test_a_probe_launched_from_the_card_runs_on_a_worker(free_text_run, celery_worker, researcher):
    with JudgeServer(script=lambda request: REPLY, latency_s=0.01) as server:
        config = services.judge_config_create(name="worker-probe", task="free-text", belief_source="logprob",
                                              endpoint=judge_endpoint(server, use_cache=False))
        judge_run = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, enqueue=False))
        asked, in_queue = len(server.requests), BeliefLabel.objects.filter(queue=config.queue).count()
        response = client_for(researcher).post(reverse("evaluation:judge_quality", args=[config.name]),
                                               {"judge_run": judge_run.pk, "kind": "rotated", "sample": 5, "seed": 2})
        assert response.status_code == 302
        probe = JudgeRun.objects.get(config=config, probe="rotated")
        wait_until(lambda: JudgeRun.objects.get(pk=probe.pk).status == RunStatus.FINISHED, 60,
                   "the probe to finish on the worker")
        assert len(server.requests) == asked + 5
    probe.refresh_from_db()
    assert (probe.n, probe.scored, probe.errors) == (5, 5, 0)
    assert "evaluation.tasks.judge_run_execute" in celery_worker.log.read_text()
    assert JudgeProbeLabel.objects.filter(judge_run=probe).count() == 5
    assert BeliefLabel.objects.filter(queue=config.queue).count() == in_queue
    page = client_for(researcher).get(reverse("evaluation:judge_quality", args=[config.name])).content.decode()
    assert "0 of n = 5" in page  # the same scripted verdict whatever the order: no flip
