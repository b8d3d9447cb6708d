"""A stand-in OpenAI-compatible server with the behaviours of real ones that the run record must see.

On top of ``tests.support.model_server.ModelServer`` (a real HTTP server on 127.0.0.1):
``GET /v1/models`` (``models``; None = no such route, as on some servers), a required key
(``key``: 401 without it), unknown models (404 ``model_not_found``, as OpenAI and vLLM answer),
``max_tokens`` honoured (the reply cut to that many words, ``finish_reason: "length"``), the
first ``slow_first`` chat requests never answered within the client's timeout, ``fail_when``
(a request predicate answered with HTTP 400, e.g. one stage of a multi-round method), and the
bodies of the chat requests received (``bodies``).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from tests.support.model_server import ModelServer


class StandIn(ModelServer):
    def __init__(self, *, models: tuple[str, ...] | None = ("stand-in",), key: str | None = None,
                 slow_first: int = 0, slow_s: float = 3.0, fail_when: Callable[[dict], bool] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.models, self.key, self.slow_first, self.slow_s, self.fail_when = models, key, slow_first, slow_s, fail_when
        self.bodies: list[dict] = []
        self.model_requests = 0

    async def _route(self, method, path, body, headers=None):
        headers = headers or {}
        if self.key is not None and path.startswith("/v1/") and headers.get("authorization") != f"Bearer {self.key}":
            return 401, json.dumps({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}).encode(), {}
        if path == "/chat/completions":  # served under /v1 only, as vLLM and llama.cpp do
            return 404, b'{"detail": "Not Found"}', {}
        if method == "GET" and path == "/v1/models" and self.models is not None:
            self.model_requests += 1
            data = [{"id": name, "object": "model", "owned_by": "stand-in"} for name in self.models]
            return 200, json.dumps({"object": "list", "data": data}).encode(), {}
        if method == "POST" and path == "/v1/chat/completions":
            request = json.loads(body or b"{}")
            self.bodies.append(request)
            if self.models is not None and request.get("model") not in self.models:
                message = f"The model `{request.get('model')}` does not exist."
                return 404, json.dumps({"error": {"message": message, "code": "model_not_found"}}).encode(), {}
            if len(self.bodies) <= self.slow_first:
                await asyncio.sleep(self.slow_s)  # past the client's timeout: it gives up, the "server" goes on
            if self.fail_when is not None and self.fail_when(request):
                return self._count(400), json.dumps({"error": {"message": "This model's maximum context length is "
                                                                         "8192 tokens"}}).encode(), {}
            status, payload, extra = await super()._route(method, path, body, headers)
            cap = request.get("max_tokens")
            if status == 200 and cap:
                data = json.loads(payload)
                words = data["choices"][0]["message"]["content"].split(" ")
                if len(words) > cap:
                    data["choices"][0]["message"]["content"] = " ".join(words[:cap])
                    data["choices"][0]["finish_reason"] = "length"
                    data["usage"]["completion_tokens"] = cap
                payload = json.dumps(data).encode()
            return status, payload, extra
        return await super()._route(method, path, body, headers)
