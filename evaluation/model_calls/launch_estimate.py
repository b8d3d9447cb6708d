"""What a launch will ask of an endpoint, before it starts (no Django inside): requests and, when the
endpoint has prices, an approximate cost.

requests = items x samples x rotations (circular order; else 1) x the method's calls per answer
(self-consistency k, complexity-CoT k + 1, the multi-round Detective Thinking prompt 5, else 1).

Input tokens are estimated from the items' token counts (annotation.text.token_count: words, numbers,
CJK characters and punctuation; a model's own tokenizer differs) plus each method's template around
them and its demonstrations, for every call; later turns of a multi-call method also resend the
earlier ones, so that part is a lower bound. Output tokens are unknown before the model answers: the
cost of the output is given as an upper bound from the endpoint's max_tokens, or not at all. The
response cache is not consulted: a repeated launch may cost less.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from annotation.text import token_count
from evaluation.prompting.answer_reading import option_labels
from evaluation.prompting.methods import Method
from evaluation.prompting.prompts import template_text

_BLANK_OPTIONS = 4


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


def template_tokens(method: Method) -> int:
    """Tokens a method's first prompt adds around an item: its first template with the item's fields empty
    and the option labels shown."""
    labels = "\n".join(f"{label}. " for label in option_labels(_BLANK_OPTIONS, "numbers"))
    text = template_text(method.templates[0]).format_map(_Blank(options=labels, answer_format="1/2/3/4"))
    return token_count(text)


@dataclass(frozen=True)
class RunEstimate:
    method: str
    label: str
    items: int
    rows: int
    requests: int
    tokens_in: int  # approximate, see the module's note


@dataclass(frozen=True)
class LaunchEstimate:
    runs: tuple[RunEstimate, ...]
    requests: int
    tokens_in: int
    max_tokens_out: int | None  # requests x max_tokens, when max_tokens is set
    cost_in: float | None  # None when the endpoint has no input price
    cost_out_max: float | None  # None without an output price or max_tokens
    builtin: bool = False

    @property
    def priced(self) -> bool:
        return self.cost_in is not None or self.cost_out_max is not None

    def as_dict(self) -> dict:
        return {**asdict(self), "priced": self.priced}


def estimate(*, methods: Sequence[Method], k: int | None, items: int, item_tokens: int, samples: int,
             rotations: int, max_tokens: int | None = None, price_in_per_mtok: float | None = None,
             price_out_per_mtok: float | None = None, builtin: bool = False) -> LaunchEstimate:
    """``item_tokens`` is the sum over the selected items of their context, question and options tokens."""
    runs = []
    mean_item = item_tokens / items if items else 0.0
    for method in methods:
        rows = items * samples * rotations
        calls = method.requests_per_answer(k or method.default_k)
        per_prompt = item_tokens + items * template_tokens(method) + items * method.shots * mean_item
        runs.append(RunEstimate(method=method.name, label=method.label, items=items, rows=rows,
                                requests=rows * calls,
                                tokens_in=round(per_prompt * samples * rotations * calls)))
    requests = sum(r.requests for r in runs)
    tokens_in = sum(r.tokens_in for r in runs)
    max_out = requests * max_tokens if max_tokens else None
    return LaunchEstimate(
        runs=tuple(runs), requests=requests, tokens_in=tokens_in, max_tokens_out=max_out,
        cost_in=None if price_in_per_mtok is None else tokens_in * float(price_in_per_mtok) / 1_000_000,
        cost_out_max=(None if price_out_per_mtok is None or max_out is None
                      else max_out * float(price_out_per_mtok) / 1_000_000),
        builtin=builtin,
    )


@dataclass(frozen=True)
class SweepEstimate:
    """A sweep's estimate: one LaunchEstimate per endpoint (its runs are the methods), and the totals."""

    endpoints: tuple[tuple[str, LaunchEstimate], ...]

    @property
    def runs(self) -> int:
        return sum(len(e.runs) for _, e in self.endpoints)

    @property
    def requests(self) -> int:
        return sum(e.requests for _, e in self.endpoints)

    @property
    def tokens_in(self) -> int:
        return sum(e.tokens_in for _, e in self.endpoints)

    @property
    def cost_in(self) -> float | None:
        """The input cost of the priced endpoints (None when none has an input price)."""
        costs = [e.cost_in for _, e in self.endpoints if e.cost_in is not None]
        return sum(costs) if costs else None

    @property
    def cost_out_max(self) -> float | None:
        costs = [e.cost_out_max for _, e in self.endpoints if e.cost_out_max is not None]
        return sum(costs) if costs else None

    @property
    def priced(self) -> bool:
        return any(e.priced for _, e in self.endpoints)

    @property
    def unpriced(self) -> list[str]:
        """Endpoints that cost something but have no prices: their cost is not in the totals."""
        return [name for name, e in self.endpoints if not e.builtin and not e.priced]

    def as_dict(self) -> dict:
        return {"runs": self.runs, "requests": self.requests, "tokens_in": self.tokens_in, "cost_in": self.cost_in,
                "cost_out_max": self.cost_out_max, "priced": self.priced, "unpriced": self.unpriced,
                "endpoints": [{"endpoint": name, **e.as_dict()} for name, e in self.endpoints]}
