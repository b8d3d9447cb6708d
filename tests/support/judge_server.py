"""The stand-in model server, scripted as a judge: verdict replies with their token log-probabilities.

A :class:`JudgeServer` is a :class:`tests.support.model_server.ModelServer` whose
``script(request) -> ScriptedReply`` gives the reply text and, optionally, the
``choices[0].logprobs.content`` list of the chat API (token, logprob, top_logprobs),
which the server adds to its answer. ``verdict_reply`` builds a JSON verdict whose
verdict token carries the given alternatives.
"""
from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluation.services.runs import endpoint_create
from tests.support.model_server import ModelServer


@dataclass(frozen=True)
class ScriptedReply:
    text: str
    logprobs: list[dict] | None = None  # the chat API's logprobs.content, or None (not returned)
    finish_reason: str = "stop"  # "length": the reply was cut at max_tokens


def token_entry(token: str, logprob: float, top: Sequence[tuple[str, float]] = ()) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode()),
            "top_logprobs": [{"token": t, "logprob": p, "bytes": list(t.encode())} for t, p in (top or [(token, logprob)])]}


def verdict_reply(verdict: str, alternatives: Sequence[tuple[str, float]], *, rationale: str = "Scripted.",
                  key: str = "verdict") -> ScriptedReply:
    """``{"<key>": "<verdict>", "rationale": ...}`` tokenised in pieces; the verdict token's top_logprobs are
    ``alternatives`` (its own logprob is the one given for ``verdict`` there)."""
    pieces = ['{"', key, '":', ' "', verdict, '",', ' "', "rationale", '":', " " + json.dumps(rationale), "}"]
    own = dict(alternatives)[verdict]
    tokens = [token_entry(p, -0.01) if p != verdict or i != 4 else token_entry(p, own, alternatives)
              for i, p in enumerate(pieces)]
    return ScriptedReply("".join(pieces), tokens)


_CURRENT: contextvars.ContextVar[ScriptedReply | None] = contextvars.ContextVar("scripted_reply", default=None)


class JudgeServer(ModelServer):
    """``requests`` lists the chat requests answered by the script, in order of arrival."""

    def __init__(self, *, script: Callable[[dict], ScriptedReply], **config):
        self.script = script
        self.requests: list[dict] = []
        super().__init__(responder=lambda request: _CURRENT.get().text, **config)

    async def _chat(self, body: bytes):
        try:
            request = json.loads(body)
        except ValueError:
            return await super()._chat(body)
        self.requests.append(request)
        reply = self.script(request)
        _CURRENT.set(reply)  # this connection's task only: read by the responder, then by the lines below
        status, payload, extra = await super()._chat(body)
        if status != 200 or (reply.logprobs is None and reply.finish_reason == "stop"):
            return status, payload, extra
        try:
            data = json.loads(payload)
        except ValueError:  # an injected malformed body
            return status, payload, extra
        data["choices"][0]["finish_reason"] = reply.finish_reason
        if reply.logprobs is not None:
            data["choices"][0]["logprobs"] = {"content": reply.logprobs}
        return status, json.dumps(data).encode(), extra


def judge_endpoint(server, **fields):
    """A model endpoint at the stand-in server (max_concurrency 4 unless given)."""
    return endpoint_create(name=f"judge stand-in {time.time_ns()}", base_url=server.base_url, model="stand-in-judge",
                           max_concurrency=fields.pop("max_concurrency", 4), **fields)
