"""Where model endpoints may point. With the policy restricted (DEBUG off), a host that is or resolves to a
loopback, private, link-local (or other non-public) address is refused unless its network is allowed
(EVALUATION_ENDPOINT_ALLOWED_NETWORKS; the test settings allow loopback for the stand-in servers). The launch
check says the same of a refused address, a closed port and a port that is open but no HTTP server: it tells
nothing about the machine's network. The workers send nothing to a refused address.

Only loopback addresses are ever connected to here; the other kinds are classified, never asked.
"""
from __future__ import annotations

import ipaddress
import socket
import threading

import pytest
from django.test import override_settings

from evaluation.execution import chunks as execution
from evaluation.model_calls import preflight
from evaluation.model_calls.destinations import (
    UNREACHABLE,
    DestinationPolicy,
    DestinationRefused,
    address_kind,
    check_url,
    check_url_without_lookup,
)
from evaluation.models import ModelEndpoint, Run, RunStatus
from evaluation.services import runs as services
from tests.evaluation.stand_in import StandIn
from tests.support.items import import_items

REPLY = "### Answer:\n1"
LOOPBACK = ["127.0.0.0/8", "::1/128"]
#: The policy of a production setting that lists no network: loopback refused too.
NOTHING_LISTED = override_settings(EVALUATION_ENDPOINT_RESTRICTED=True, EVALUATION_ENDPOINT_ALLOWED_NETWORKS=[])


# --- the pure classification and policy ----------------------------------------------------------------------

@pytest.mark.parametrize("address, kind", [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.254", "private"), ("192.168.1.1", "private"),
    ("fd12:3456::1", "private"), ("::ffff:10.0.0.1", "private"), ("64:ff9b::a00:1", "private"),
    ("169.254.169.254", "link_local"), ("fe80::1", "link_local"),
    ("100.64.0.1", "shared"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("224.0.0.251", "multicast"), ("ff02::1", "multicast"),
    ("2002:7f00:1::1", "loopback"),  # 6to4 carrying 127.0.0.1
    ("8.8.8.8", "public"), ("1.1.1.1", "public"), ("2606:4700:4700::1111", "public"), ("::ffff:8.8.8.8", "public"),
    ("172.32.0.1", "public"), ("100.128.0.1", "public"),
])
def test_address_classification(address, kind):
    assert address_kind(address) == kind
    assert address_kind(ipaddress.ip_address(address)) == kind


def test_the_policy_refuses_what_is_not_public_unless_listed():
    assert address_kind("240.0.0.1") != "public" and address_kind("192.0.2.1") != "public"  # reserved, documentation
    restricted = DestinationPolicy.of(restricted=True)
    assert restricted.allows("8.8.8.8") and restricted.allows("2606:4700:4700::1111")
    for address in ("127.0.0.1", "::1", "10.0.0.1", "192.168.0.10", "169.254.169.254", "fe80::1", "0.0.0.0",
                    "100.64.0.1", "::ffff:127.0.0.1", "240.0.0.1"):
        assert not restricted.allows(address), address
    listed = DestinationPolicy.of(restricted=True, allowed=["127.0.0.0/8", "10.0.5.17", "fd00::/8"])
    assert listed.allows("127.0.0.1") and listed.allows("::ffff:127.0.0.1") and listed.allows("10.0.5.17")
    assert listed.allows("fd00::5") and not listed.allows("10.0.5.18") and not listed.allows("::1")
    assert DestinationPolicy.of(restricted=False).allows("169.254.169.254")  # DEBUG: anything
    with pytest.raises(ValueError):
        DestinationPolicy.of(restricted=True, allowed=["10.0.0.0/33"])


def test_host_names_are_judged_by_every_address_they_resolve_to():
    policy = DestinationPolicy.of(restricted=True)
    names = {"public.test": ["93.184.216.34"], "internal.test": ["10.0.0.7"], "mixed.test": ["93.184.216.34", "::1"]}

    def resolver(host, port):
        if host not in names:
            raise socket.gaierror("no such host")
        return [ipaddress.ip_address(a) for a in names[host]]

    check_url("https://public.test/v1", policy, resolver=resolver)
    check_url("https://nowhere.test/v1", policy, resolver=resolver)  # fails by itself, as a DNS failure
    for url, kind in [("http://internal.test:8000/v1", "private"), ("http://mixed.test/v1", "loopback"),
                      ("http://127.0.0.1:9/v1", "loopback"), ("http://[::1]:9/v1", "loopback"),
                      ("http://2130706433:9/v1", "loopback"), ("http://0x7f.1/v1", "loopback"),
                      ("http://169.254.169.254/latest/meta-data/", "link_local")]:
        with pytest.raises(DestinationRefused) as refused:
            check_url(url, policy, resolver=resolver)
        assert refused.value.kind == kind, url
    # When an endpoint is saved: addresses and this machine's names only, without asking a resolver.
    with pytest.raises(DestinationRefused):
        check_url_without_lookup("http://localhost:8000/v1", policy)
    check_url_without_lookup("http://internal.test:8000/v1", policy)


# --- the policy on endpoints, the launch check and the workers (loopback only) --------------------------------

@pytest.mark.django_db
def test_an_endpoint_on_a_refused_address_is_not_saved(api, settings):
    assert settings.EVALUATION_ENDPOINT_RESTRICTED and "127.0.0.0/8" in settings.EVALUATION_ENDPOINT_ALLOWED_NETWORKS
    body = {"kind": "openai", "model": "m"}
    assert api.post("/api/evaluation/endpoints/", {**body, "name": "ok", "base_url": "http://127.0.0.1:8116/v1"},
                    format="json").status_code == 201
    with NOTHING_LISTED:
        for n, url in enumerate(("http://127.0.0.1:8116/v1", "http://localhost:8116/v1", "http://[::1]:8116/v1",
                                 "http://169.254.169.254/v1", "http://10.0.0.1:8000/v1")):
            refused = api.post("/api/evaluation/endpoints/", {**body, "name": f"no {n}", "base_url": url},
                               format="json")
            assert refused.status_code == 400, url
            assert "EVALUATION_ENDPOINT_ALLOWED_NETWORKS" in " ".join(refused.json()["errors"]["base_url"])
    with override_settings(EVALUATION_ENDPOINT_RESTRICTED=False, EVALUATION_ENDPOINT_ALLOWED_NETWORKS=[]):
        assert api.post("/api/evaluation/endpoints/", {**body, "name": "debug", "base_url": "http://10.0.0.1/v1"},
                        format="json").status_code == 201
    assert not ModelEndpoint.objects.filter(name__startswith="no ").exists()


class _Listener:
    """A loopback port that accepts connections and closes them at once, or writes a line that is no HTTP."""

    def __init__(self, banner: bytes = b""):
        self.banner, self.sock = banner, socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                if self.banner:
                    conn.sendall(self.banner)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _refusal(url: str, policy: DestinationPolicy) -> tuple[str, str]:
    with pytest.raises(preflight.PreflightRefused) as refused:
        preflight.check_endpoint(base_url=url, model="stand-in", timeout_s=3, policy=policy)
    return refused.value.error_class, refused.value.message.replace(url, "URL")


def test_the_launch_check_says_the_same_of_a_refused_address_a_closed_port_and_a_port_that_is_no_http_server():
    allowed = DestinationPolicy.of(restricted=True, allowed=LOOPBACK)
    refusing = DestinationPolicy.of(restricted=True)
    with _Listener() as disconnects, _Listener(b"SSH-2.0-OpenSSH_9.2\r\n") as ssh, \
            StandIn(reply=REPLY) as server:
        preflight.check_endpoint(base_url=server.base_url, model="stand-in", timeout_s=3, policy=allowed)  # it works
        outcomes = {
            "closed port": _refusal(_closed_port_url(), allowed),
            "open port, closes at once": _refusal(disconnects.base_url, allowed),
            "open port, not HTTP": _refusal(ssh.base_url, allowed),
            "refused address, open HTTP server": _refusal(server.base_url, refusing),
            "refused address, closed port": _refusal(_closed_port_url(), refusing),
        }
        asked = server.model_requests
    assert set(outcomes.values()) == {("unreachable", f"cannot reach URL: {UNREACHABLE}")}, outcomes
    assert asked == 1  # the refused address was never asked


@pytest.mark.django_db(transaction=True)
def test_a_launch_on_a_refused_address_reads_as_an_unreachable_one_and_the_workers_send_nothing(
        api, detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=3)
    with StandIn(reply=REPLY) as server:
        endpoint = services.endpoint_create(name="local", base_url=server.base_url, model="stand-in")
        closed = services.endpoint_create(name="closed", base_url=_closed_port_url(), model="stand-in")
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
        with NOTHING_LISTED:
            refused = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive",
                                                         "split": "test"}, format="json")
            report = execution.execute_chunk(run_id=run.pk)
        dead = api.post("/api/evaluation/runs/", {"endpoint": closed.pk, "method": "naive", "split": "test"},
                        format="json")
        asked, completions = server.model_requests, len(server.bodies)
    assert refused.status_code == 400 and dead.status_code == 400
    assert refused.json()["error_class"] == dead.json()["error_class"] == "unreachable"
    assert refused.json()["detail"].replace(endpoint.base_url, "URL").replace("'local'", "E") == \
        dead.json()["detail"].replace(closed.base_url, "URL").replace("'closed'", "E")
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and UNREACHABLE in run.failure_reason and report.failed
    assert (asked, completions) == (0, 0)
    assert Run.objects.count() == 1
