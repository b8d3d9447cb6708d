"""`evaluate` against real stand-in servers on 127.0.0.1: --endpoint uses the stored endpoint's settings (the
run's params equal them), generation flags and --table9 reach the request body, a default max_tokens per
method, the JSON line says what happened (truncated, cached, spent, errors), a repeated command is all
cached, the preflight refuses a dead or wrong endpoint before any run, a failed run exits non-zero; --refresh
supersedes a run's stale rows and asks their items again as the API's refresh does, and refuses naming the run."""
import gc
import io
import json
import socket
import threading
import time

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F

from annotation.models import Item
from annotation.services import item_update
from evaluation.management.commands.evaluate import Command as EvaluateCommand
from evaluation.models import ModelEndpoint, Result, Run, RunStatus, SupersededResult
from evaluation.services import runs as services
from foundation.process_start import freeze_startup_objects
from tests.evaluation.stand_in import StandIn
from tests.support.items import import_items

pytestmark = pytest.mark.django_db(transaction=True)
REPLY = "### Key Information:\nThe clue is in the first sentence of the story.\n\n### Answer:\n1"


@pytest.fixture
def items(detectbench_dir):
    return import_items(detectbench_dir / "test.jsonl", split="test", limit=4)


def evaluate(*args) -> tuple[list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", *args, "--split", "test", "--wait", "--in-process", "--no-progress", stdout=out, stderr=err)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()], err.getvalue()


def evaluate_fails(*args) -> tuple[str, list[dict]]:
    out = io.StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("evaluate", *args, "--split", "test", "--wait", "--in-process", "--no-progress", stdout=out,
                     stderr=io.StringIO())
    return str(refused.value), [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_endpoint_by_name_uses_its_settings_and_the_runs_params_equal_them(items):
    with StandIn(reply=REPLY) as server:
        plain = services.endpoint_create(name="plain", base_url=server.base_url, model="stand-in")
        table9 = services.endpoint_create(name="paper table 9", base_url=server.base_url, model="stand-in",
                                          table9_preset=True, extra_params={"top_k": 5})
        (line,), _ = evaluate("--endpoint", "paper table 9")
        body = server.bodies[-1]
    run = Run.objects.get(pk=line["run"])
    assert run.endpoint_id == table9.pk != plain.pk
    assert run.params == table9.generation_params() == line["params"]
    assert line["endpoint"] == "paper table 9"
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"], body["top_k"]) == (
        0.95, 0.95, 2000, 42, 5)


def _freeze_at_each_request(server_class=StandIn):
    frozen_at_request = []

    class Watching(server_class):
        async def _route(self, method, path, body, headers=None):
            if path == "/v1/chat/completions":
                frozen_at_request.append(gc.get_freeze_count())
            return await super()._route(method, path, body, headers)

    return Watching, frozen_at_request


def test_manage_py_computing_a_run_first_freezes_what_its_process_loaded_as_a_worker_does(items, capsys):
    """`manage.py evaluate --wait` computing in its own process: the SDK imported and everything loaded frozen out of
    the collector's walks before the first model request, as a Celery worker does at its start."""
    Watching, frozen_at_request = _freeze_at_each_request()
    gc.unfreeze()  # what the apps' ready() froze: only the command's own freeze counts here
    try:
        with Watching(reply=REPLY) as server:
            EvaluateCommand().run_from_argv(["manage.py", "evaluate", "--base-url", server.base_url, "--model",
                                             "stand-in", "--split", "test", "--limit", "2", "--no-preflight", "--wait",
                                             "--in-process", "--no-progress"])
    finally:
        freeze_startup_objects()  # as the apps' ready() left the process, for the rest of the suite
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["status"] == "finished" and len(frozen_at_request) == 2
    assert min(frozen_at_request) > 50_000  # Django, the command's modules and the SDK, before the first request
    import openai

    assert all(o is not openai.OpenAI for o in gc.get_objects())  # frozen objects are not among the collector's


def test_the_command_called_inside_a_process_that_lives_on_freezes_nothing(items):
    """make run's demo runs call the command inside a Celery worker (which froze at its own start): objects of the
    task in progress are not frozen, which would keep their cycles from ever being collected."""
    Watching, frozen_at_request = _freeze_at_each_request()
    gc.unfreeze()
    try:
        with Watching(reply=REPLY) as server:
            (line,), _ = evaluate("--base-url", server.base_url, "--model", "stand-in", "--limit", "2", "--no-preflight")
        assert line["status"] == "finished" and frozen_at_request == [0, 0] and gc.get_freeze_count() == 0
    finally:
        freeze_startup_objects()  # as the apps' ready() left the process, for the rest of the suite


def test_endpoint_by_name_refuses_generation_flags_and_names_the_known_endpoints(items):
    services.endpoint_create(name="known one", base_url="http://127.0.0.1:9/v1", model="m")
    message, _ = evaluate_fails("--endpoint", "known one", "--max-tokens", "10")
    assert "--max-tokens" in message and "stored endpoint's settings" in message
    message, _ = evaluate_fails("--endpoint", "nope")
    assert "No endpoint named 'nope'" in message and "known one" in message
    assert not Run.objects.exists()


def test_generation_flags_reach_the_request_and_name_their_own_endpoint(items):
    with StandIn(reply=REPLY) as server:
        (line,), _ = evaluate("--base-url", server.base_url, "--model", "stand-in", "--max-tokens", "7",
                              "--temperature", "0.3", "--top-p", "0.9", "--seed", "5", "--timeout", "30")
        body = server.bodies[-1]
        (paper,), _ = evaluate("--base-url", server.base_url, "--model", "stand-in", "--table9", "--limit", "1")
        paper_body = server.bodies[-1]
        (again,), _ = evaluate("--base-url", server.base_url, "--model", "stand-in", "--table9", "--limit", "1")
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (7, 0.3, 0.9, 5)
    endpoint = Run.objects.get(pk=line["run"]).endpoint
    assert (endpoint.max_tokens, endpoint.temperature, endpoint.top_p, endpoint.seed, endpoint.timeout_s) == (
        7, 0.3, 0.9, 5, 30.0)
    assert Run.objects.get(pk=line["run"]).seed == 5  # the run's own seed too
    assert (paper_body["temperature"], paper_body["top_p"], paper_body["max_tokens"], paper_body["seed"],
            paper_body["top_k"]) == (0.95, 0.95, 2000, 42, 5)
    paper_endpoint = Run.objects.get(pk=paper["run"]).endpoint
    assert paper_endpoint.pk != endpoint.pk  # other settings on the same URL: another endpoint, found again
    assert Run.objects.get(pk=again["run"]).endpoint_id == paper_endpoint.pk
    assert again["cached"] == 1 and again["tokens_spent_out"] == 0


def test_a_default_max_tokens_per_method_never_unlimited(items):
    with StandIn(reply=REPLY) as server:
        lines, _ = evaluate("--base-url", server.base_url, "--model", "stand-in", "--method", "naive,self-cot,free-text",
                            "--limit", "1")
        caps = [b["max_tokens"] for b in server.bodies]
    assert caps == [512, 2000, 1024]
    assert [line["params"]["max_tokens"] for line in lines] == [512, 2000, 1024]


def test_the_json_line_records_truncated_cached_spent_and_a_repeat_is_all_cached(items):
    with StandIn(reply=REPLY) as server:
        args = ("--base-url", server.base_url, "--model", "stand-in", "--max-tokens", "5", "--temperature", "0.8")
        (first,), err = evaluate(*args)
        (second,), err2 = evaluate(*args)
        assert len(server.bodies) == items
    assert first["truncated"] == items and first["cached"] == 0 and first["tokens_spent_out"] == 5 * items
    assert first["tokens_spent_in"] > 0 and first["errors"] == 0 and first["commonest_error"] is None
    assert second["cached"] == items and second["truncated"] == items
    assert second["tokens_spent_in"] == second["tokens_spent_out"] == 0
    assert f"{items} truncated at the token cap" in err and f"{items} from the cache" in err2


def test_preflight_refuses_a_refused_connection_before_any_run(items):
    port = free_port()
    message, lines = evaluate_fails("--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m")
    assert "preflight" in message and "connection refused" in message and "no run was started" in message
    assert lines == [] and not Run.objects.exists() and not ModelEndpoint.objects.exists()


@pytest.mark.parametrize("case", ["no /v1", "unknown model", "wrong key", "no models route"])
def test_preflight_names_what_is_wrong(items, case, monkeypatch):
    monkeypatch.setenv("STANDIN_KEY", "sk-right")
    with StandIn(reply=REPLY, key="sk-right", models=None if case == "no models route" else ("stand-in",)) as server:
        url, model, key = server.base_url, "stand-in", "STANDIN_KEY"
        if case == "no /v1":
            url = url[: -len("/v1")]
        elif case == "unknown model":
            model = "gpt-9"
        elif case == "wrong key":
            monkeypatch.setenv("STANDIN_KEY", "sk-wrong")
        if case == "no models route":  # the tiny completion instead, and the run goes ahead
            (line,), _ = evaluate("--base-url", url, "--model", model, "--api-key-env", key, "--limit", "1")
            assert server.bodies[0]["max_tokens"] == 1 and line["errors"] == 0
            return
        message, _ = evaluate_fails("--base-url", url, "--model", model, "--api-key-env", key)
    expected = {"no /v1": "lacks /v1", "unknown model": "unknown model 'gpt-9'", "wrong key": "HTTP 401"}[case]
    assert expected in message and "no run was started" in message
    assert "sk-wrong" not in message and not Run.objects.exists()


def test_an_unset_key_variable_is_a_warning_and_an_error_for_hosts_that_need_a_key(items, monkeypatch):
    monkeypatch.delenv("NO_SUCH_VAR_KEY", raising=False)
    with StandIn(reply=REPLY) as server:
        (line,), err = evaluate("--base-url", server.base_url, "--model", "stand-in", "--api-key-env",
                                "NO_SUCH_VAR_KEY", "--limit", "1")
    assert "warning: the API-key variable NO_SUCH_VAR_KEY is not set" in err and line["errors"] == 0
    runs = Run.objects.count()
    message, _ = evaluate_fails("--base-url", "https://api.openai.com/v1", "--model", "gpt-4o-mini",
                                "--api-key-env", "NO_SUCH_VAR_KEY", "--no-preflight")
    assert "api.openai.com needs an API key" in message and "NO_SUCH_VAR_KEY" in message
    assert Run.objects.count() == runs and not ModelEndpoint.objects.filter(base_url__contains="openai").exists()


def test_a_server_stopped_mid_run_fails_the_run_and_exits_non_zero(detectbench_dir, settings):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=12)
    settings.EVALUATION_BREAKER_THRESHOLD = 5
    answered = []
    server = StandIn(reply=REPLY)
    stopper = threading.Thread(target=server.stop)

    def responder(request):
        answered.append(1)
        if len(answered) == 3:
            stopper.start()
        return REPLY

    server.responder = responder
    server.start()
    try:
        started = time.monotonic()
        message, (line,) = evaluate_fails("--base-url", server.base_url, "--model", "stand-in", "--concurrency", "1",
                                          "--method", "naive,self-cot")
        elapsed = time.monotonic() - started
    finally:
        stopper.join()
    assert f"run {line['run']} (naive) failed" in message and "connection refused" in message
    assert "not launched: self-cot" in message
    assert line["status"] == RunStatus.FAILED and "kept failing" in line["failure_reason"]
    assert elapsed < 60


def test_a_run_whose_rows_are_all_errors_exits_non_zero(items):
    with StandIn(reply=REPLY, fail_when=lambda request: request.get("max_tokens") != 1) as server:
        message, (line,) = evaluate_fails("--base-url", server.base_url, "--model", "stand-in")
    assert line["errors"] == items and line["status"] == RunStatus.FAILED
    assert line["commonest_error"]["count"] == items and "maximum context length" in line["commonest_error"]["message"]
    assert line["error_classes"] == {"http_400": items}
    assert "failed" in message and "every row failed" in message


def test_through_a_celery_worker_a_dead_endpoint_fails_the_run_and_evaluate_exits_non_zero(detectbench_dir,
                                                                                           celery_worker, settings):
    """The breaker in a worker process (default threshold, 20): 24 items, one attempt each, nothing listening."""
    settings.EVALUATION_WORKER_PROCESSES = 1  # one chunk: the 24 requests meet one breaker (each process has its own)
    import_items(detectbench_dir / "test.jsonl", split="test", limit=24)
    url = f"http://127.0.0.1:{free_port()}/v1"
    services.endpoint_for_cli(base_url=url, model="m", concurrency=1)
    ModelEndpoint.objects.filter(base_url=url).update(max_attempts=1, use_cache=False)
    out = io.StringIO()
    started = time.monotonic()
    with pytest.raises(CommandError) as refused:
        call_command("evaluate", "--base-url", url, "--model", "m", "--split", "test", "--wait", "--no-progress",
                     "--no-preflight", "--concurrency", "1", stdout=out, stderr=io.StringIO())
    (line,) = [json.loads(text) for text in out.getvalue().splitlines() if text.strip()]
    run = Run.objects.get(pk=line["run"])
    assert run.status == RunStatus.FAILED and "20 consecutive failed requests" in run.failure_reason
    assert "connection refused" in str(refused.value) and f"run {run.pk} (naive) failed" in str(refused.value)
    # The 20th trips it, and is a failed row too: the error count counts the failed requests.
    assert line["errors"] == 20 and line["error_classes"] == {"connection_refused": 20}
    assert time.monotonic() - started < 60
    assert "run_chunk" in celery_worker.log.read_text(errors="replace")  # computed by the worker, not in process


def _edited(item_ids: list[int]) -> None:
    """Curation changes the content of these items: their rows of every run are stale."""
    for item in Item.objects.filter(pk__in=item_ids):
        item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Who, really?"})


def _history(run: Run) -> tuple[set, set]:
    """What a run's superseded rows and current rows hold (without ids, which differ between runs)."""
    superseded = {(s.item_id, s.sample_index, s.item_version, s.row["raw_output"], s.row["answer_index"])
                  for s in SupersededResult.objects.filter(run=run)}
    current = set(Result.objects.filter(run=run).values_list("item_id", "sample_index", "item_version", "raw_output",
                                                              "answer_index"))
    return superseded, current


def test_refresh_supersedes_the_stale_rows_and_asks_their_items_again_as_the_api_does(items, api, researcher):
    endpoint = services.endpoint_for_cli(builtin="lexical")
    by_cli, by_api = (services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
                      for _ in range(2))
    for run in (by_cli, by_api):
        services.run_execute_in_process(run=run)
    changed = sorted(Item.objects.values_list("pk", flat=True))[:2]
    old = {r.pk: (r.item_id, r.raw_output) for r in Result.objects.filter(run=by_cli, item_id__in=changed)}
    _edited(changed)

    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", "--refresh", str(by_cli.pk), "--wait", "--in-process", "--no-progress", stdout=out,
                 stderr=err)
    (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
    assert (line["run"], line["superseded"], line["asked_again"], line["status"]) == (by_cli.pk, 2, 2, "finished")
    assert f"run {by_cli.pk} naive: 2 stale row(s) kept as superseded, 2 item(s) asked again, computing here" in (
        err.getvalue())
    kept = SupersededResult.objects.filter(run=by_cli)
    assert {s.result_id: (s.item_id, s.row["raw_output"]) for s in kept} == old
    assert {s.item_version for s in kept} == {1} and {s.superseded_by_id for s in kept} == {None}
    assert Result.objects.filter(run=by_cli).count() == items  # one row per item, as before
    assert not Result.objects.filter(run=by_cli).exclude(item_version=F("item__content_version")).exists()

    # The API's refresh of an identical run, computed: the same rows superseded, the same rows now.
    assert api.post(f"/api/evaluation/runs/{by_api.pk}/refresh/").status_code == 200
    services.run_execute_in_process(run=by_api)
    assert _history(by_cli) == _history(by_api) and len(_history(by_cli)[0]) == 2
    assert set(SupersededResult.objects.filter(run=by_api).values_list("superseded_by", flat=True)) == {researcher.pk}

    # Nothing stale any more: a refresh supersedes nothing, asks nothing, and the run stays finished.
    out = io.StringIO()
    call_command("evaluate", "--refresh", str(by_cli.pk), stdout=out, stderr=io.StringIO())
    again = json.loads(out.getvalue())
    assert (again["superseded"], again["asked_again"], again["status"]) == (0, 0, "finished")
    assert SupersededResult.objects.filter(run=by_cli).count() == 2


def test_refresh_without_wait_queues_the_run_and_a_running_run_is_refused_naming_it(items):
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              enqueue=False)
    services.run_execute_in_process(run=run)
    _edited(sorted(Item.objects.values_list("pk", flat=True))[:1])
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", "--refresh", str(run.pk), stdout=out, stderr=err)
    line = json.loads(out.getvalue())
    assert (line["superseded"], line["asked_again"], line["status"]) == (1, 1, RunStatus.QUEUED)
    assert "1 stale row(s) kept as superseded, 1 item(s) asked again, queued" in err.getvalue()
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
    with pytest.raises(CommandError) as refused:  # the service's own refusal: the run is queued, not finished
        call_command("evaluate", "--refresh", str(run.pk), stdout=io.StringIO(), stderr=io.StringIO())
    assert f"run {run.pk} was not refreshed: Run {run.pk} is still running" in str(refused.value)
    assert SupersededResult.objects.filter(run=run).count() == 1


def test_refresh_refuses_a_missing_run_and_the_flags_of_a_launch(items):
    with pytest.raises(CommandError, match="no run 999999: nothing was refreshed"):
        call_command("evaluate", "--refresh", "999999", stdout=io.StringIO(), stderr=io.StringIO())
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              enqueue=False)
    with pytest.raises(CommandError) as refused:
        call_command("evaluate", "--refresh", str(run.pk), "--method", "self-cot", "--limit", "1",
                     stdout=io.StringIO(), stderr=io.StringIO())
    assert "--method, --limit: not with --refresh" in str(refused.value)
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command("evaluate", "--refresh", str(run.pk), "--builtin", "lexical", stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert not SupersededResult.objects.exists() and Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
