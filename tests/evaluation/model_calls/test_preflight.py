"""Launches from the page and the API check each remote endpoint first, like `evaluate` does: a dead port, an
unknown model or a missing key refuses the whole launch with the reason (and launches nothing); a live endpoint
launches, with a warning for an unset key variable; `no_preflight` skips the check; built-ins need none."""
import socket

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Run
from evaluation.services import runs as services
from tests.evaluation.stand_in import StandIn
from tests.support.items import import_items

pytestmark = pytest.mark.django_db(transaction=True)
REPLY = "### Answer:\n1"


@pytest.fixture
def items(detectbench_dir):
    return import_items(detectbench_dir / "test.jsonl", split="test", limit=3)


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_api_launch_on_a_dead_endpoint_is_refused_with_the_reason_and_nothing_is_launched(items, api):
    dead = services.endpoint_create(name="dead", base_url=dead_url(), model="m")
    builtin = services.endpoint_create(name="lex", kind="builtin", model="lexical")
    response = api.post("/api/evaluation/runs/", {"endpoint": dead.pk, "method": "naive", "split": "test"},
                        format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    # A closed port reads as any unreachable (or refused) address: the check is no port scanner.
    assert (body["code"], body["field"], body["error_class"]) == ("endpoint_unusable", "endpoint", "unreachable")
    assert "'dead' cannot serve a run" in body["detail"] and "No run was launched" in body["detail"]
    # A sweep with one dead endpoint among good ones launches none of its runs.
    sweep = api.post("/api/evaluation/sweeps/", {"endpoints": [builtin.pk, dead.pk], "methods": ["naive"],
                                                 "split": "test"}, format="json")
    assert sweep.status_code == 400 and sweep.json()["error_class"] == "unreachable"
    assert not Run.objects.exists()
    skipped = api.post("/api/evaluation/runs/", {"endpoint": dead.pk, "method": "naive", "split": "test",
                                                 "no_preflight": True}, format="json")
    assert skipped.status_code == 201 and skipped.json()["preflight_warnings"] == []
    assert Run.objects.count() == 1


def test_api_launch_checks_the_model_and_warns_of_an_unset_key(items, api, monkeypatch):
    monkeypatch.delenv("LAUNCH_NO_SUCH_KEY", raising=False)
    with StandIn(reply=REPLY, models=("stand-in",)) as server:
        wrong = services.endpoint_create(name="wrong model", base_url=server.base_url, model="gpt-9")
        right = services.endpoint_create(name="right", base_url=server.base_url, model="stand-in",
                                         api_key_env="LAUNCH_NO_SUCH_KEY")
        refused = api.post("/api/evaluation/sweeps/", {"endpoints": [right.pk, wrong.pk], "methods": ["naive"],
                                                       "split": "test"}, format="json")
        assert refused.status_code == 400 and refused.json()["error_class"] == "unknown_model"
        assert "unknown model 'gpt-9'" in refused.json()["detail"] and not Run.objects.exists()
        launched = api.post("/api/evaluation/sweeps/", {"endpoints": [right.pk], "methods": ["naive", "self-cot"],
                                                        "split": "test"}, format="json")
        asked, completions = server.model_requests, len(server.bodies)
    assert launched.status_code == 201, launched.content
    assert len(launched.json()["runs"]) == 2
    assert launched.json()["preflight_warnings"] == [
        "right: the API-key variable LAUNCH_NO_SUCH_KEY is not set in this process: the check went without a key "
        "(the workers need it, or requests go without one)"]
    # GET /v1/models once per endpoint and launch (2 for the refused sweep, 1 for the two runs launched), and no
    # completion was spent on the checks (no worker runs here: the runs wait in the queue).
    assert (asked, completions) == (3, 0)


def test_page_launch_refuses_a_dead_endpoint_and_warns_on_a_live_one(items, researcher_client, monkeypatch):
    monkeypatch.delenv("LAUNCH_NO_SUCH_KEY", raising=False)
    dead = services.endpoint_create(name="dead one", base_url=dead_url(), model="m")
    page = researcher_client.post(reverse("evaluation:run_launch"), {
        "endpoints": [dead.pk], "methods": ["naive"], "split": "test", "seed": 42, "samples": 1,
        "option_order": "original"})
    text = page.content.decode()
    assert page.status_code == 200 and "cannot serve a run" in text and "connection refused" in text
    assert not Run.objects.exists()
    with StandIn(reply=REPLY, models=("stand-in",)) as server:
        live = services.endpoint_create(name="live one", base_url=server.base_url, model="stand-in",
                                        api_key_env="LAUNCH_NO_SUCH_KEY")
        launched = researcher_client.post(reverse("evaluation:run_launch"), {
            "endpoints": [live.pk], "methods": ["naive"], "split": "test", "seed": 42, "samples": 1,
            "option_order": "original"}, follow=True)
    text = launched.content.decode()
    assert Run.objects.filter(endpoint=live).count() == 1
    assert "LAUNCH_NO_SUCH_KEY is not set" in text  # the warning is shown on the page it lands on


def test_the_endpoints_of_a_sweep_are_checked_at_once_not_one_timeout_after_another(items, api):
    """Five endpoints on a server that accepts connections and never answers: the five checks are all under way
    before the first one times out (one after another, they would arrive a timeout apart), and the launch is
    refused naming the first endpoint and the timeout."""
    import threading
    import time

    arrivals: list[float] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            arrivals.append(time.monotonic())
            held.append(conn)  # read nothing, answer nothing

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:
        hung = [services.endpoint_create(name=f"hung {i}", base_url=url, model=f"m{i}", timeout_s=2)
                for i in range(5)]
        response = api.post("/api/evaluation/sweeps/", {"endpoints": [e.pk for e in hung], "methods": ["naive"],
                                                        "split": "test"}, format="json")
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert response.status_code == 400
    body = response.json()
    assert body["error_class"] == "timeout" and "'hung 0' cannot serve a run" in body["detail"]
    assert "no answer within 2 s" in body["detail"] and not Run.objects.exists()
    assert len(arrivals) == 5 and max(arrivals) - min(arrivals) < 1.5, arrivals


def test_a_key_only_the_workers_hold_is_not_a_refusal_but_a_wrong_one_is(items, api, monkeypatch):
    """The web process may lack the workers' key: a 401 to a check made without a key is a warning; a key that
    is set here and refused is still a refusal (HTTP 401, and the key is not echoed)."""
    monkeypatch.delenv("LAUNCH_WORKER_KEY", raising=False)
    with StandIn(reply=REPLY, key="sk-right") as server:
        endpoint = services.endpoint_create(name="keyed", base_url=server.base_url, model="stand-in",
                                            api_key_env="LAUNCH_WORKER_KEY")
        launched = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive", "split": "test"},
                            format="json")
        assert launched.status_code == 201, launched.content
        warnings = launched.json()["preflight_warnings"]
        assert len(warnings) == 2 and "LAUNCH_WORKER_KEY is not set in this process" in warnings[0]
        assert "answered HTTP 401 to a check without a key" in warnings[1]
        monkeypatch.setenv("LAUNCH_WORKER_KEY", "sk-wrong-value")
        refused = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive", "split": "test"},
                           format="json")
    assert refused.status_code == 400 and refused.json()["error_class"] == "http_401"
    assert "sk-wrong-value" not in refused.content.decode()
    assert Run.objects.count() == 1


def test_a_host_name_the_client_cannot_encode_is_a_refusal_not_a_500(items, api):
    endpoint = services.endpoint_create(name="idna", base_url="http://xn--zz.com/v1", model="m")
    response = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive", "split": "test"},
                        format="json")
    assert response.status_code == 400 and response.json()["error_class"] == "invalid_url"
    assert "IDNAError" in response.json()["detail"] and not Run.objects.exists()


def test_the_app_s_own_secrets_cannot_be_named_as_an_api_key(api):
    for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "PGPASSWORD"):
        response = api.post("/api/evaluation/endpoints/", {"name": f"e {name}", "base_url": "http://127.0.0.1:9/v1",
                                                           "model": "m", "api_key_env": name}, format="json")
        assert response.status_code == 400, name
        assert "never sent to a model server" in response.content.decode()
    assert api.post("/api/evaluation/endpoints/", {"name": "ok", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                                   "api_key_env": "OPENAI_API_KEY"}, format="json").status_code == 201


def test_a_check_that_never_ends_is_cut_at_the_launch_deadline(items, api):
    """A server that trickles one header byte every 0.3 s never trips a per-read timeout; the launch still
    answers, after its own deadline, with the endpoint refused for no answer."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def trickle() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            for _ in range(100):  # 30 s at most
                if stop.wait(0.3):
                    return
                try:
                    conn.sendall(b"X")
                except OSError:
                    return

    threading.Thread(target=trickle, daemon=True).start()
    endpoint = services.endpoint_create(name="trickle", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
                                        model="m", timeout_s=1)
    try:
        response = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive", "split": "test"},
                            format="json")
    finally:
        stop.set()
        listener.close()
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error_class"] == "timeout" and "within 1 s" in body["detail"] and not Run.objects.exists()


def test_a_launch_the_selection_refuses_asks_no_endpoint(items, api, researcher_client):
    """No items match: refused as such at once, before (and without) any request to the endpoint."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    endpoint = services.endpoint_create(name="listening", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
                                        model="m", timeout_s=2)
    try:
        api_refusal = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive",
                                                         "split": "no-such-split"}, format="json")
        page = researcher_client.post(reverse("evaluation:run_launch"), {
            "endpoints": [endpoint.pk], "methods": ["naive"], "split": "no-such-split", "seed": 42, "samples": 1,
            "option_order": "original"})
        try:
            listener.accept()
            asked = True
        except BlockingIOError:
            asked = False
    finally:
        listener.close()
    assert api_refusal.status_code == 400 and "No items match" in api_refusal.json()["detail"]
    assert page.status_code == 200 and "No items match" in page.content.decode()
    assert not asked and not Run.objects.exists()
