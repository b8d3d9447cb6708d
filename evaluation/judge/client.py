"""The judge's model client: the project's chat client, also reading the token log-probabilities (no Django).

The request is the same as a model run's (same limiter, retries, transport); a
``logprob`` judge adds ``logprobs: true`` and ``top_logprobs`` to its parameters and
this client reads ``choices[0].logprobs.content`` beside the text. For the response
cache (which stores text), a reply with log-probabilities is kept as a small JSON
envelope that :func:`unpack_cached` opens again.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields

from evaluation.judge.beliefs import TokenLogprob, logprobs_as_json, read_logprobs
from evaluation.model_calls.clients import OpenAIChatClient
from evaluation.prompting.methods import Completion
from foundation import fast_json

TOP_LOGPROBS = 5
_ENVELOPE = "detectbench-judge-reply"


@dataclass(frozen=True)
class JudgeCompletion(Completion):
    logprobs: tuple[TokenLogprob, ...] = ()


class LogprobChatClient(OpenAIChatClient):
    """An OpenAIChatClient whose completions carry the log-probabilities of their tokens (when returned)."""

    def read(self, body: bytes, *, latency_s: float, attempts: int) -> Completion:
        completion = super().read(body, latency_s=latency_s, attempts=attempts)
        try:
            content = ((fast_json.loads(body)["choices"][0] or {}).get("logprobs") or {}).get("content")
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            content = None
        # Every field of the plain completion (finish_reason, failed attempts, ...), plus the log-probabilities.
        return JudgeCompletion(**{f.name: getattr(completion, f.name) for f in fields(Completion)},
                               logprobs=read_logprobs(content))


def pack_for_cache(completion: Completion) -> str:
    """The text to store in the response cache: the reply, wrapped with its log-probabilities if it has any."""
    logprobs = getattr(completion, "logprobs", ())
    if not logprobs:
        return completion.text
    return json.dumps({_ENVELOPE: 1, "text": completion.text, "logprobs": logprobs_as_json(logprobs)},
                      ensure_ascii=False)


def unpack(completion: Completion) -> tuple[str, tuple[TokenLogprob, ...]]:
    """(reply text, log-probabilities) of a fresh or a cached completion."""
    if completion.cached and completion.text.startswith("{") and _ENVELOPE in completion.text[:40]:
        try:
            data = json.loads(completion.text)
        except ValueError:
            return completion.text, ()
        if isinstance(data, dict) and data.get(_ENVELOPE) == 1 and isinstance(data.get("text"), str):
            return data["text"], read_logprobs(data.get("logprobs"))
    return completion.text, tuple(getattr(completion, "logprobs", ()))
