"""A stand-in OpenAI-compatible model server for tests and benchmarks: a real HTTP server on 127.0.0.1.

- ``POST /v1/chat/completions`` (also ``/chat/completions``): answers after ``latency_s``
  with a scripted reply (a Python ``responder(request_json) -> str`` in thread mode, or
  the ``reply`` text / ``reply_mode`` rule in subprocess mode);
- error injection, drawn per request from a seeded generator: ``rate_429`` (with
  ``Retry-After``), ``rate_500``, ``rate_timeout`` (never answers within the client's
  timeout), ``rate_malformed`` (200 with a body that is not JSON);
- counters: requests, in-flight now, peak in flight, answers per status, arrival times of the chat
  requests (``time.monotonic()``, comparable across processes on one machine);
  ``GET /_stats`` returns them, ``POST /_config`` changes the configuration (JSON),
  ``POST /_reset`` zeroes the counters.

Thread mode::

    with ModelServer(latency_s=0.05, responder=fn) as server:
        server.base_url  # http://127.0.0.1:PORT/v1

Subprocess mode (its own CPU, for benchmarks)::

    python -m tests.support.model_server --latency 0.2 [--reply-mode first]  # prints "LISTENING <port>"
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent.parent
_OPTION = re.compile(r"^\s*(\d{1,2})[.)]\s+", re.MULTILINE)


@dataclass
class ServerConfig:
    latency_s: float = 0.0
    latency_jitter_s: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_timeout: float = 0.0
    rate_malformed: float = 0.0
    retry_after_s: float | None = 0.05
    timeout_sleep_s: float = 30.0
    seed: int = 0
    reply: str = "### Key Information:\nThe clue.\n\n### Answer:\n1"
    reply_mode: str = "fixed"  # fixed | first | last
    echo_auth_status: int | None = None  # answer every chat request with this status, echoing the Authorization header


@dataclass
class Stats:
    requests: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    connections: int = 0  # TCP connections accepted (keep-alive working: about the client's pool size)
    by_status: dict = field(default_factory=dict)
    answered_ok: int = 0
    arrivals: list = field(default_factory=list)  # time.monotonic() of each chat request's arrival (system-wide clock)


def usage_tokens(text: str) -> int:
    """A token count for ``usage``: whitespace-separated words (a regex tokenizer cost the server
    ~0.6 ms of CPU per benchmark request, which the client on the same CPUs pays for)."""
    return len(text.split()) if text else 0


def _last_user(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return message.get("content") or ""
    return ""


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (the server's CPU per request is about halved), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency of the project
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class ModelServer:
    def __init__(self, *, responder: Callable[[dict], str] | None = None, host: str = "127.0.0.1", port: int = 0,
                 **config):
        self.config = ServerConfig(**config)
        self.responder = responder
        self.stats = Stats()
        self.host, self.port = host, port
        self._rng = random.Random(self.config.seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    # -- lifecycle ---------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start_async(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    def start(self) -> ModelServer:
        def run() -> None:
            self._loop = new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self.start_async())
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="model-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop and self._server:
            async def shutdown():
                self._server.close()
                for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                    task.cancel()

            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def configure(self, **changes) -> None:
        for key, value in changes.items():
            setattr(self.config, key, value)
        if "seed" in changes:
            self._rng = random.Random(self.config.seed)

    def reset(self) -> None:
        self.stats = Stats()

    # -- HTTP --------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                status, payload, extra = await self._route(method, path.split("?")[0], body, headers)
                reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
                          400: "Bad Request", 401: "Unauthorized"}.get(status, "OK")
                head_out = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json",
                            f"Content-Length: {len(payload)}", "Connection: keep-alive"]
                head_out += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(head_out) + "\r\n\r\n").encode() + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _route(self, method: str, path: str, body: bytes, headers: dict | None = None) -> tuple[int, bytes, dict]:
        if path == "/_stats":
            return 200, json.dumps(asdict(self.stats)).encode(), {}
        if path == "/_reset" and method == "POST":
            self.reset()
            return 200, b"{}", {}
        if path == "/_config" and method == "POST":
            self.configure(**json.loads(body or b"{}"))
            return 200, json.dumps(asdict(self.config)).encode(), {}
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            if self.config.echo_auth_status is not None:  # a server that puts the credentials in its error text
                auth = (headers or {}).get("authorization", "")
                message = f"invalid credentials: Authorization: {auth} (key {auth.split(' ')[-1]})"
                return self._count(self.config.echo_auth_status), json.dumps({"error": {"message": message}}).encode(), {}
            return await self._chat(body)
        return 404, b'{"error": {"message": "not found"}}', {}

    async def _chat(self, body: bytes) -> tuple[int, bytes, dict]:
        stats = self.stats
        stats.requests += 1
        stats.arrivals.append(time.monotonic())
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        try:
            request = json.loads(body)
            config = self.config
            roll = self._rng.random()
            delay = config.latency_s + (self._rng.uniform(0, config.latency_jitter_s) if config.latency_jitter_s else 0)
            edges = [("429", config.rate_429), ("500", config.rate_500), ("timeout", config.rate_timeout),
                     ("malformed", config.rate_malformed)]
            fault, acc = None, 0.0
            for name, rate in edges:
                acc += rate
                if roll < acc:
                    fault = name
                    break
            if fault == "timeout":
                await asyncio.sleep(config.timeout_sleep_s)
            elif delay:
                await asyncio.sleep(delay)
            if fault == "429":
                return self._count(429), b'{"error": {"message": "rate limited", "type": "rate_limit"}}', (
                    {"Retry-After": str(config.retry_after_s)} if config.retry_after_s is not None else {})
            if fault == "500":
                return self._count(500), b'{"error": {"message": "internal error"}}', {}
            if fault == "malformed":
                return self._count(200), b'{"id": "chatcmpl-broken", "choices": [', {}
            text = self._reply(request)
            prompt_tokens = sum(usage_tokens(str(m.get("content") or "")) for m in request.get("messages") or [])
            completion_tokens = usage_tokens(text)
            payload = {
                "id": f"chatcmpl-{stats.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": request.get("model", "stand-in"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens},
            }
            stats.answered_ok += 1
            return self._count(200), json.dumps(payload).encode(), {}
        finally:
            stats.in_flight -= 1

    def _count(self, status: int) -> int:
        key = str(status)
        self.stats.by_status[key] = self.stats.by_status.get(key, 0) + 1
        return status

    def _reply(self, request: dict) -> str:
        if self.responder is not None:
            return self.responder(request)
        if self.config.reply_mode in ("first", "last"):
            labels = _OPTION.findall(_last_user(request).split("### Options:")[-1])
            label = (labels[0] if self.config.reply_mode == "first" else labels[-1]) if labels else "1"
            return f"### Key Information:\nThe clue.\n\n### Answer:\n{label}"
        return self.config.reply


# -- subprocess helpers ------------------------------------------------------
class ServerProcess:
    """The server in its own process (its own CPU): ``base_url``, ``stats()``, ``configure()``, ``stop()``."""

    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc, self.port = proc, port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _call(self, path: str, data: dict | None = None) -> dict:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}",
                                         data=json.dumps(data).encode() if data is not None else None,
                                         method="POST" if data is not None else "GET")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stats(self) -> dict:
        return self._call("/_stats")

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) the server process has used so far; None where /proc is missing."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def configure(self, **changes) -> dict:
        return self._call("/_config", changes)

    def reset(self) -> None:
        self._call("/_reset", {})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_server_process(**config) -> ServerProcess:
    args = [sys.executable, "-m", "tests.support.model_server"]
    for key, value in config.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    proc = subprocess.Popen(args, cwd=REPO_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if not line.startswith("LISTENING"):
        proc.kill()
        raise RuntimeError(f"model server did not start: {line}{proc.stdout.read()}")
    return ServerProcess(proc, int(line.split()[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    for name, default in asdict(ServerConfig()).items():
        kind = float if isinstance(default, float) or default is None else type(default)
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default)
    args = vars(parser.parse_args())
    port = args.pop("port")
    server = ModelServer(port=port, **args)

    async def serve() -> None:
        await server.start_async()
        print(f"LISTENING {server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
