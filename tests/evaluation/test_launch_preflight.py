"""Launches from the page and the API check each remote endpoint first, like `evaluate` does: a dead port, an
unknown model or a missing key refuses the whole launch with the reason (and launches nothing); a live endpoint
launches, with a warning for an unset key variable; `no_preflight` skips the check; built-ins need none."""
import socket

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation import services
from evaluation.models import Run
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
    assert (body["code"], body["field"], body["error_class"]) == ("endpoint_unusable", "endpoints", "connection_refused")
    assert "'dead' cannot serve a run" in body["detail"] and "No run was launched" in body["detail"]
    # A sweep with one dead endpoint among good ones launches none of its runs.
    sweep = api.post("/api/evaluation/sweeps/", {"endpoints": [builtin.pk, dead.pk], "methods": ["naive"],
                                                 "split": "test"}, format="json")
    assert sweep.status_code == 400 and sweep.json()["error_class"] == "connection_refused"
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
        "right: the API-key variable LAUNCH_NO_SUCH_KEY is not set: requests to 127.0.0.1 go without a key"]
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
