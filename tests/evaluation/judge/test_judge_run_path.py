"""A judge run goes the model runs' way where they share a concern: the circuit breaker stops a judge run
whose endpoint keeps failing (the run fails with the reason, after a bounded number of requests, not one per
target), and a reply cut at the token cap is named as such, fresh and from the response cache alike."""
import pytest

from annotation.models import BeliefLabel
from evaluation.models import CachedResponse, RunStatus
from evaluation.services import judge as services
from tests.support.judge_server import JudgeServer, ScriptedReply, judge_endpoint

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_circuit_breaker_fails_a_judge_run_whose_endpoint_refuses_every_request(free_text_run, settings):
    settings.EVALUATION_BREAKER_THRESHOLD = 3
    with JudgeServer(script=lambda request: ScriptedReply('{"verdict": "correct"}'), echo_auth_status=401) as server:
        endpoint = judge_endpoint(server, max_concurrency=2, max_attempts=1, use_cache=False)
        config = services.judge_config_create(name="stand-in-401", task="free-text", belief_source="verbal",
                                              endpoint=endpoint)
        judge_run = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, enqueue=False))
        sent = server.stats.by_status.get("401", 0)
    assert judge_run.n >= 10  # enough targets that "one request each" would be far above the bound
    assert judge_run.status == RunStatus.FAILED, judge_run.status
    assert "kept failing" in judge_run.last_error and "401" in judge_run.last_error
    assert 3 <= sent <= 3 + 2, sent  # the threshold, plus what was already in flight at the endpoint's concurrency
    assert not BeliefLabel.objects.filter(queue=config.queue).exists()


def test_a_reply_cut_at_the_token_cap_is_named_fresh_and_from_the_cache(free_text_run):
    cut = ScriptedReply('{"verdict": "corr', finish_reason="length")
    with JudgeServer(script=lambda request: cut) as server:
        endpoint = judge_endpoint(server)
        config = services.judge_config_create(name="stand-in-cut", task="free-text", belief_source="verbal",
                                              endpoint=endpoint)
        first = services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=config, run=free_text_run, limit=3, enqueue=False))
        requests = len(server.requests)
        assert set(CachedResponse.objects.values_list("finish_reason", flat=True)) == {"length"}
        twin = services.judge_config_create(name="stand-in-cut-twin", task="free-text", belief_source="verbal",
                                            endpoint=endpoint)
        services.judge_run_execute_in_process(
            judge_run=services.judge_run_launch(config=twin, run=free_text_run, limit=3, enqueue=False))
        assert len(server.requests) == requests  # the twin was answered from the cache
    assert first.unscored == 3
    for queue in (config.queue, twin.queue):
        rationales = set(BeliefLabel.objects.filter(queue=queue).values_list("rationale", flat=True))
        assert len(rationales) == 1 and "cut at the judge's token cap" in rationales.pop()
