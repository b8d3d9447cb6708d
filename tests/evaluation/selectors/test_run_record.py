"""What a run records, against a real stand-in server on 127.0.0.1 and PostgreSQL (in-process execution):
finish_reason and truncation, every stage of a multi-call method even when a later one fails, timed-out
attempts, cached rows and the tokens actually spent; the circuit breaker; infrastructure errors propagate."""
import threading
import time

import psycopg
import pytest
import redis
from django.db import connection

from annotation.models import Item
from evaluation.execution import chunks as execution
from evaluation.execution.infrastructure import INFRASTRUCTURE_ERRORS
from evaluation.models import Result, RunStatus
from evaluation.selectors.run_record import run_record_counts
from evaluation.services import runs as services
from tests.conftest import database_url_for_subprocess
from tests.evaluation.stand_in import StandIn
from tests.support.faults import run_in_thread
from tests.support.items import import_items

pytestmark = pytest.mark.django_db(transaction=True)

LONG_REPLY = "### Key Information:\nThe clue is in the first sentence of the story.\n\n### Answer:\n1"


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)
    return list(Item.objects.filter(split="test").order_by("pk"))


def endpoint_for(server, **fields):
    return services.endpoint_create(name=f"stand-in {time.time_ns()}", base_url=server.base_url, model="stand-in",
                                    max_concurrency=fields.pop("max_concurrency", 4), **fields)


def run_in_process(endpoint, method="naive", **kwargs):
    run = services.run_launch(endpoint=endpoint, method=method, split="test", enqueue=False, **kwargs)
    services.run_execute_in_process(run=run)
    run.refresh_from_db()
    return run


def test_finish_reason_on_every_row_and_rows_cut_at_the_token_cap_are_marked_and_counted(items):
    with StandIn(reply=LONG_REPLY) as server:
        whole = run_in_process(endpoint_for(server, max_tokens=200))
        cut = run_in_process(endpoint_for(server, max_tokens=4))
        assert server.bodies[-1]["max_tokens"] == 4
    assert set(Result.objects.filter(run=whole).values_list("finish_reason", "truncated")) == {("stop", False)}
    assert set(Result.objects.filter(run=cut).values_list("finish_reason", "truncated")) == {("length", True)}
    counts = run_record_counts(run=cut)
    assert counts["truncated"] == len(items) and counts["finish_reason_missing"] == 0
    assert run_record_counts(run=whole)["truncated"] == 0
    assert Result.objects.filter(run=cut).first().messages[0]["finish_reason"] == "length"


def test_the_run_page_shows_what_happened(items, researcher_client):
    with StandIn(reply=LONG_REPLY) as server:
        endpoint = endpoint_for(server, max_tokens=4)
        first = run_in_process(endpoint)
        again = run_in_process(endpoint)
    cut_row = '<tr><th>Cut at the token cap</th><td>%d</td></tr>'
    cached_row = '<tr><th>Answered from the cache</th><td>%d</td></tr>'
    page = researcher_client.get(f"/evaluation/runs/{first.pk}/").content.decode()
    assert cut_row % len(items) in page and cached_row % 0 in page
    page = researcher_client.get(f"/evaluation/runs/{again.pk}/").content.decode()
    assert cached_row % len(items) in page and "spent 0 / 0; the rest answered from the cache" in page
    assert page.count("<th>Tokens") == 1


def test_a_repeated_run_is_all_cached_and_spends_no_tokens(items):
    with StandIn(reply=LONG_REPLY) as server:
        endpoint = endpoint_for(server, temperature=0.8, max_tokens=100)
        first = run_in_process(endpoint)
        second = run_in_process(endpoint)
        assert len(server.bodies) == len(items)
    one, two = run_record_counts(run=first), run_record_counts(run=second)
    assert one["cached"] == 0 and one["tokens_spent_out"] > 0 and one["tokens_spent_in"] > 0
    assert two["cached"] == two["rows"] == len(items)
    assert two["tokens_spent_in"] == two["tokens_spent_out"] == 0
    row = Result.objects.filter(run=second).first()
    assert row.cached and row.tokens_out > 0 and row.finish_reason == "stop"  # the cached output's own reason
    assert row.messages[0]["cached"] is True and row.messages[0]["attempts"] == 0


def test_every_stage_of_a_multi_round_method_is_kept_when_a_later_one_fails(items):
    def third_stage(request):
        return len([m for m in request["messages"] if m["role"] == "user"]) == 3

    with StandIn(reply=LONG_REPLY, fail_when=third_stage) as server:
        run = run_in_process(endpoint_for(server, max_attempts=1), method="detective-thinking-multiround", limit=2)
    rows = list(Result.objects.filter(run=run))
    assert len(rows) == 2
    for row in rows:
        assert row.error and "maximum context length" in row.error
        assert row.failed_call == "mr-3" and row.error_class == "http_400"
        assert [c["call"] for c in row.messages] == ["mr-1", "mr-2", "mr-3"]
        assert all(c["tokens_out"] > 0 and c["finish_reason"] == "stop" for c in row.messages[:2])
        assert row.messages[2]["error_class"] == "http_400" and row.messages[2]["output"] == ""
        assert row.tokens_out == sum(c["tokens_out"] for c in row.messages[:2]) > 0
        assert row.spent_tokens_out == row.tokens_out and row.attempts == 3
    assert run.status == RunStatus.FAILED and "every row failed" in run.failure_reason


def test_a_timed_out_request_is_recorded_retried_and_visible_never_silently_replaced(items):
    with StandIn(reply=LONG_REPLY, slow_first=1, slow_s=2.0) as server:
        run = run_in_process(endpoint_for(server, timeout_s=0.5, max_concurrency=1, use_cache=False), limit=2)
    rows = list(Result.objects.filter(run=run).order_by("item_id"))
    assert all(not r.error for r in rows)
    retried = [r for r in rows if r.timeouts]
    assert len(retried) == 1
    (row,) = retried
    assert row.attempts == 2 and row.messages[0]["attempts"] == 2
    (failed,) = row.messages[0]["failed_attempts"]
    assert failed["error_class"] == "timeout" and "wait_s" in failed
    counts = run_record_counts(run=run)
    assert counts["abandoned_requests"] == 1 and counts["abandoned_tokens_max"] == 512  # naive's default cap


def test_the_circuit_breaker_fails_a_run_whose_endpoint_stops_mid_run(items, settings):
    settings.EVALUATION_BREAKER_THRESHOLD = 4
    answered = []
    server = StandIn(reply=LONG_REPLY, latency_s=0.05)
    stopper = threading.Thread(target=server.stop)

    def responder(request):
        answered.append(1)
        if len(answered) == 2:
            stopper.start()  # the server dies after its second answer
        return LONG_REPLY

    server.responder = responder
    server.start()
    try:
        endpoint = endpoint_for(server, max_concurrency=1, use_cache=False, max_attempts=3)
        started = time.monotonic()
        run = run_in_process(endpoint)
        elapsed = time.monotonic() - started
    finally:
        if stopper.is_alive() or stopper.ident:
            stopper.join()
        else:
            server.stop()
    assert run.status == RunStatus.FAILED, run.status
    assert "kept failing" in run.failure_reason and "connection refused" in run.failure_reason
    assert elapsed < 30
    done = Result.objects.filter(run=run, error="").count()
    assert 1 <= done <= 2 and Result.objects.filter(run=run).count() < len(items)  # the rest left to a resume
    assert services.missing_item_ids(run)


def test_a_redis_error_of_the_limiter_propagates_and_writes_no_row(items, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there: the shared limiter cannot work
    with StandIn(reply=LONG_REPLY) as server:
        run = services.run_launch(endpoint=endpoint_for(server), method="naive", split="test", enqueue=False)
        with pytest.raises(redis.exceptions.ConnectionError):
            execution.execute_chunk(run_id=run.pk)
        assert server.bodies == []
    assert not Result.objects.filter(run=run).exists()


def test_a_database_error_mid_run_propagates_and_leaves_only_whole_rows(items):
    """The chunk's database connection is killed by PostgreSQL mid-run: the chunk raises a database error (for
    the Celery task to retry), no row is stored as failed, every stored row is whole."""
    killed = []
    url = database_url_for_subprocess()

    def responder(request):
        if not killed and len(server.bodies) >= 3:
            with psycopg.connect(url, autocommit=True) as admin:  # a connection of its own ends the chunk's
                killed.extend(admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchall())
        return LONG_REPLY

    server = StandIn(responder=responder, latency_s=0.3)
    with server:
        run = services.run_launch(endpoint=endpoint_for(server, max_concurrency=1, use_cache=False), method="naive",
                                  split="test", enqueue=False)
        with pytest.raises(Exception) as raised:
            execution.execute_chunk(run_id=run.pk)
    assert isinstance(raised.value, INFRASTRUCTURE_ERRORS), repr(raised.value)
    assert killed
    connection.close()  # this thread's connection was ended too: a new one
    assert not Result.objects.filter(run=run).exclude(error="").exists()
    assert all(r.raw_output and r.parse_status for r in Result.objects.filter(run=run))


def test_the_tokens_rows_spent_before_a_refresh_replaced_them_stay_in_the_run_record(items, researcher_client):
    """A refresh moves stale rows aside and asks their items again: the run's record still counts what those rows
    had spent (the run spent it), apart from the current rows' spend, on the page too."""
    from annotation.services import item_update
    from evaluation.models import SupersededResult

    with StandIn(reply=LONG_REPLY) as server:
        endpoint = endpoint_for(server, max_tokens=100, use_cache=False)
        run = run_in_process(endpoint)
        before = run_record_counts(run=run)
        assert before["superseded_rows"] == 0 and before["superseded_tokens_spent_in"] == 0
        edited = Item.objects.filter(pk__in=run.item_ids).order_by("pk")[:2]
        for item in edited:
            item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Really?"})
        run, superseded = services.run_refresh(run=run, enqueue=False)
        services.run_execute_in_process(run=run)
    assert superseded == 2
    after = run_record_counts(run=run)
    old = list(SupersededResult.objects.filter(run=run))
    assert after["superseded_rows"] == 2
    assert after["superseded_tokens_spent_in"] == sum(o.row["spent_tokens_in"] for o in old) > 0
    assert after["superseded_tokens_spent_out"] == sum(o.row["spent_tokens_out"] for o in old) > 0
    assert after["rows"] == before["rows"]  # the current rows: one per item, as before
    page = researcher_client.get(f"/evaluation/runs/{run.pk}/").content.decode()
    assert (f'id="superseded-spent">(and {after["superseded_tokens_spent_in"]} / '
            f'{after["superseded_tokens_spent_out"]} spent by the rows refreshes superseded)') in page


def test_wall_time_and_spent_cost_count_every_execution_of_a_cancelled_resumed_and_refreshed_run(
        items, researcher_client):
    """A run cancelled part-way, resumed, then refreshed after an edit has three executions: its wall time is their
    sum (the latest beside it), and the spent cost prices every token spent, the superseded rows' included, while
    ``cost`` stays the price of the current rows; the run page and the API say the same."""
    from annotation.services import item_update
    from evaluation.selectors.runs import run_summary
    from evaluation.statistics.metrics import cost

    with StandIn(reply=LONG_REPLY, latency_s=0.05) as server:
        endpoint = endpoint_for(server, max_tokens=100, use_cache=False, max_concurrency=1,
                                price_in_per_mtok=2.0, price_out_per_mtok=8.0)
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
        services.run_cancel(run=run)  # the first execution ends at once, before any row
        run.refresh_from_db()
        first = run.latest_wall_s
        assert first is not None and run.earlier_wall_s == 0
        run = services.run_resume(run=run, enqueue=False)
        services.run_execute_in_process(run=run)
        run.refresh_from_db()
        second = run.latest_wall_s
        assert second >= 0.05 * len(run.item_ids)  # one request at a time
        assert run.earlier_wall_s == pytest.approx(first) and run.wall_s == pytest.approx(first + second)
        for item in Item.objects.filter(pk__in=run.item_ids).order_by("pk")[:2]:
            item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Really?"})
        run, superseded = services.run_refresh(run=run, enqueue=False)
        services.run_execute_in_process(run=run)
    run.refresh_from_db()
    third = run.latest_wall_s
    assert superseded == 2 and third >= 0.05 * 2
    assert run.wall_s == pytest.approx(first + second + third)
    summary = run_summary(run=run)
    assert summary.wall_s == pytest.approx(first + second + third)
    record = run_record_counts(run=run)
    spent_in = record["tokens_spent_in"] + record["superseded_tokens_spent_in"]
    spent_out = record["tokens_spent_out"] + record["superseded_tokens_spent_out"]
    assert record["superseded_tokens_spent_in"] > 0
    assert record["cost_spent"] == pytest.approx(cost(tokens_in=spent_in, tokens_out=spent_out, price_in_per_mtok=2.0,
                                                      price_out_per_mtok=8.0))
    assert record["cost_spent"] > summary.cost > 0  # the current rows cost less than all the run spent

    api = researcher_client.get(f"/api/evaluation/runs/{run.pk}/").json()
    assert api["record"]["cost_spent"] == pytest.approx(record["cost_spent"])
    assert api["metrics"]["wall_s"] == pytest.approx(run.wall_s)
    assert api["metrics"]["latest_wall_s"] == pytest.approx(third)
    page = researcher_client.get(f"/evaluation/runs/{run.pk}/").content.decode()
    assert f'id="cost-spent">(spent {record["cost_spent"]:.4f}:' in page
    assert f'id="wall">{run.wall_s:.1f} s <span class="muted" id="wall-latest">(every execution; the latest {third:.1f} s)' in page


def test_a_resume_that_finds_nothing_missing_adds_no_idle_time(items):
    """A run cancelled while its last requests were in flight gets every row, then sits cancelled; a resume finds
    nothing missing and closes it finished: its wall time stays its execution's, the idle time is not added."""
    with StandIn(reply=LONG_REPLY, latency_s=0.6) as server:
        run = services.run_launch(endpoint=endpoint_for(server, use_cache=False, max_concurrency=8), method="naive",
                                  split="test", enqueue=False)

        thread = run_in_thread(run)
        time.sleep(0.3)  # every request in flight
        services.run_cancel(run=run)
        thread.join(30)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and Result.objects.filter(run=run).count() == run.total
    executed = run.wall_s
    time.sleep(1.5)
    run = services.run_resume(run=run, enqueue=False)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.wall_s == pytest.approx(executed)


def test_a_failed_row_asked_again_keeps_what_its_failed_calls_spent(items):
    """A multi-round row whose third call failed had spent its first two calls' tokens; asked again on a resume, the
    new row's spend adds to them (the run spent both), in the row, the record and the spent cost."""
    def third_call(request):
        return sum(1 for m in request["messages"] if m["role"] == "user") == 3

    with StandIn(reply=LONG_REPLY, fail_when=third_call) as server:
        endpoint = endpoint_for(server, max_attempts=1, use_cache=False, price_in_per_mtok=2.0, price_out_per_mtok=8.0)
        run = run_in_process(endpoint, method="detective-thinking-multiround", limit=2)
        first = run_record_counts(run=run)
        assert first["errors"] == 2 and first["tokens_spent_in"] > 0
        server.fail_when = None
        run = services.run_resume(run=run, enqueue=False)
        services.run_execute_in_process(run=run)
    rows = list(Result.objects.filter(run=run))
    again_in = sum(c.get("tokens_in", 0) for r in rows for c in r.messages)
    again_out = sum(c.get("tokens_out", 0) for r in rows for c in r.messages)
    record = run_record_counts(run=run)
    assert record["errors"] == 0 and again_in > 0
    assert (record["tokens_spent_in"], record["tokens_spent_out"]) == (
        first["tokens_spent_in"] + again_in, first["tokens_spent_out"] + again_out)
    assert record["cost_spent"] == pytest.approx((record["tokens_spent_in"] * 2.0 + record["tokens_spent_out"] * 8.0)
                                                 / 1_000_000)


def test_a_run_keeps_the_prices_of_its_launch_when_the_endpoint_price_changes(items, researcher_client):
    """A finished run's cost and spent cost are priced at its launch's prices: a later edit of the endpoint's price
    (through the API, as a researcher would) changes the next run's cost, not the record of this one."""
    from evaluation.selectors.runs import run_summary

    with StandIn(reply=LONG_REPLY) as server:
        endpoint = endpoint_for(server, use_cache=False, price_in_per_mtok=2.0, price_out_per_mtok=8.0)
        run = run_in_process(endpoint)
        before = (run_summary(run=run).cost, run_record_counts(run=run)["cost_spent"])
        assert before[0] > 0
        endpoint.refresh_from_db()
        changed = researcher_client.patch(f"/api/evaluation/endpoints/{endpoint.pk}/", {
            "price_in_per_mtok": "5", "price_out_per_mtok": "20", "version": endpoint.version},
            content_type="application/json")
        assert changed.status_code == 200, changed.content
        endpoint.refresh_from_db()
        later = run_in_process(endpoint)
    run.refresh_from_db()
    assert (run_summary(run=run).cost, run_record_counts(run=run)["cost_spent"]) == before
    api = researcher_client.get(f"/api/evaluation/runs/{run.pk}/").json()
    assert (api["metrics"]["cost"], api["record"]["cost_spent"]) == pytest.approx(before)
    assert (float(later.price_in_per_mtok), float(later.price_out_per_mtok)) == (5.0, 20.0)
    assert run_summary(run=later).cost == pytest.approx(before[0] * 2.5)  # the same tokens at 2.5x the prices
