"""Prompting methods: each turns an item into chat messages and the outputs into an answer.

No Django inside. A method's ``solve`` gets the item as shown (:class:`Presented`),
its demonstrations and a ``generate(messages, call_key)`` coroutine; ``call_key``
names the call within the method (``"main"``, ``"sc-3"``, ``"mr-2"``) so that each
call has its own cache entry. The registry ``METHODS`` maps the public names
(``naive``, ``self-consistency``, ...) to instances.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Sequence

from . import parsing
from .prompts import Presented, render, templates_hash

# Bump when the way prompts are assembled changes (not the template texts: those are hashed).
ASSEMBLY_VERSION = "1"


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False


Messages = list[dict[str, str]]
Generate = Callable[[Messages, str], Awaitable[Completion]]


@dataclass
class Outcome:
    """What one (item, sample) produced: every call made, the final output and its reading."""

    output: str = ""
    answer: parsing.ParsedAnswer | None = None  # None for free-text methods
    key_information: str = ""
    free_answer: str = ""
    exchanges: list[dict] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    cached: bool = True

    def record(self, call_key: str, messages: Messages, completion: Completion) -> str:
        self.exchanges.append({"call": call_key, "messages": messages, "output": completion.text})
        self.tokens_in += completion.tokens_in
        self.tokens_out += completion.tokens_out
        self.latency_s += completion.latency_s
        self.attempts += completion.attempts
        self.cached = self.cached and completion.cached
        return completion.text

    def read(self, shown: Presented, output: str) -> "Outcome":
        self.output = output
        self.answer = parsing.parse_answer(output, shown.options, labels=shown.label_style)
        self.key_information = parsing.parse_key_information(output)
        return self


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


class Method:
    """Base class: a single prompt from ``template``, optionally after chat-turn demonstrations."""

    name: str = ""
    label: str = ""
    family: str = ""  # the row group of paper Table 4
    template: str = "naive"
    shots: int = 0
    free_text: bool = False
    default_k: int = 1

    @property
    def templates(self) -> tuple[str, ...]:
        names = (self.template,)
        if self.shots:
            names += ("demo_answer",)
        return names

    def version(self) -> str:
        return templates_hash(self.templates, salt=f"{self.name}:{ASSEMBLY_VERSION}")

    def extra_fields(self, shown: Presented) -> dict[str, str]:
        """Template values beyond the item's own (the given key information or answer)."""
        return {}

    def prompt(self, shown: Presented) -> str:
        return render(self.template, **self.extra_fields(shown), **shown.fields())

    def demo_reply(self, demo: Presented) -> str:
        return render("demo_answer", key_information=demo.gold_key_information, answer=demo.answer_label)

    def messages(self, shown: Presented, demos: Sequence[Presented]) -> Messages:
        turns: Messages = []
        for demo in demos[: self.shots]:
            turns += [user(self.prompt(demo)), assistant(self.demo_reply(demo))]
        return turns + [user(self.prompt(shown))]

    async def solve(self, shown: Presented, demos: Sequence[Presented], generate: Generate, *, k: int) -> Outcome:
        outcome = Outcome()
        messages = self.messages(shown, demos)
        output = outcome.record("main", messages, await generate(messages, "main"))
        return outcome.read(shown, output)


class Naive(Method):
    name, label, family, template = "naive", "Naive", "Naive Questioning", "naive"


class NaiveThreeShot(Naive):
    name, label, shots = "naive-3shot", "Naive (3-shot)", 3


class NaiveKeyInfo(Method):
    name, label, family, template = "naive-key-info", "Naive w/ Key Info", "Question with Extra Key Information", "naive_key_info"

    def extra_fields(self, shown: Presented) -> dict[str, str]:
        return {"key_information": shown.gold_key_information}


class NaiveKeyInfoThreeShot(NaiveKeyInfo):
    name, label, shots = "naive-key-info-3shot", "Naive w/ Key Info (3-shot)", 3


class NaiveAnswer(Method):
    name, label, family, template = "naive-answer", "Naive w/ Answer", "Question with Extra Key Information", "naive_answer"

    def extra_fields(self, shown: Presented) -> dict[str, str]:
        return {"answer": shown.answer_label}


class NaiveAnswerThreeShot(NaiveAnswer):
    name, label, shots = "naive-answer-3shot", "Naive w/ Answer (3-shot)", 3


class SelfCoT(Method):
    name, label, family, template = "self-cot", "Self-CoT", "Process Enhanced Method", "self_cot"


class AutoCoTThreeShot(Method):
    """Table 14: three worked demonstrations (thought = the demo's gold multi-hop reasoning) in one prompt."""

    name, label, family, template, shots = "auto-cot-3shot", "Auto-CoT (3-shot)", "Process Enhanced Method", "auto_cot", 3

    @property
    def templates(self) -> tuple[str, ...]:
        return (self.template, "auto_cot_demo")

    def messages(self, shown: Presented, demos: Sequence[Presented]) -> Messages:
        blocks = [
            render("auto_cot_demo", thought=demo.item.reasoning.strip(), key_information=demo.gold_key_information,
                   answer=demo.answer_label, **demo.fields())
            for demo in demos[: self.shots]
        ]
        return [user(render(self.template, demonstrations="\n\n".join(blocks), **shown.fields()))]


class SelfConsistency(Method):
    """Table 15, sampled k times; the majority answer wins (ties: the earliest sample)."""

    name, label, family, template, default_k = "self-consistency", "Self-Consistency", "Output Ensemble Method", "self_consistency", 5

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        messages = self.messages(shown, demos)
        readings = []
        for i in range(max(1, k)):
            text = outcome.record(f"sc-{i}", messages, await generate(messages, f"sc-{i}"))
            readings.append((text, parsing.parse_answer(text, shown.options, labels=shown.label_style)))
        winner = majority_vote([r.index if r.status == parsing.OK else None for _, r in readings])
        if winner is None:
            outcome.read(shown, readings[-1][0])
            if any(r.status == parsing.AMBIGUOUS for _, r in readings):
                outcome.answer = parsing.ParsedAnswer(parsing.AMBIGUOUS)
            return outcome
        text, reading = next((t, r) for t, r in readings if r.status == parsing.OK and r.index == winner)
        outcome.output = text
        outcome.answer = reading
        outcome.key_information = parsing.parse_key_information(text)
        return outcome


class ComplexityCoT(Method):
    """k Self-CoT samples; the one with the most reasoning steps feeds the Table 16 prompt."""

    name, label, family, template, default_k = "complexity-cot", "Complexity-CoT", "Output Ensemble Method", "complexity_cot", 5

    @property
    def templates(self) -> tuple[str, ...]:
        return ("self_cot", self.template)

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        first = [user(render("self_cot", **shown.fields()))]
        chains = []
        for i in range(max(1, k)):
            text = outcome.record(f"cot-{i}", first, await generate(first, f"cot-{i}"))
            chains.append(parsing.section_text(text, "thought") or text.strip())
        chain = longest_chain(chains)
        final = [user(render(self.template, chain_of_thought=chain, **shown.fields()))]
        output = outcome.record("answer", final, await generate(final, "answer"))
        return outcome.read(shown, output)


class PlanAndSolveCoT(Method):
    name, label, family, template = "ps-cot", "PS-CoT", "Multi-step Chain-of-Thought", "ps_cot"


class DetectiveThinking(Method):
    name, label, family, template = "detective-thinking", "Detective Thinking Prompt", "Multi-step Chain-of-Thought", "detective_thinking"


class DetectiveThinkingMultiRound(Method):
    """The Detective Thinking stages (clues, connection, thought, summary, answer) as successive chat turns."""

    name, label, family = "detective-thinking-multiround", "DT Prompt w/ MR Chat", "Multi-step Chain-of-Thought"
    stages = ("detective_mr_1_clues", "detective_mr_2_connection", "detective_mr_3_thought",
              "detective_mr_4_summarize", "detective_mr_5_answer")

    @property
    def templates(self) -> tuple[str, ...]:
        return self.stages

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        messages: Messages = []
        output = ""
        for number, stage in enumerate(self.stages, 1):
            messages = messages + [user(render(stage, **shown.fields()))]
            output = outcome.record(f"mr-{number}", messages, await generate(messages, f"mr-{number}"))
            messages = messages + [assistant(output)]
        return outcome.read(shown, output)


class FreeText(Method):
    """Options hidden; the free answer is stored for the LLM judge (no accuracy here)."""

    name, label, family, template, free_text = "free-text", "Free text (options hidden)", "Free text", "free_text", True

    def prompt(self, shown: Presented) -> str:
        return render(self.template, context=shown.item.context, question=shown.item.question)

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        messages = self.messages(shown, demos)
        output = outcome.record("main", messages, await generate(messages, "main"))
        outcome.output = output
        outcome.key_information = parsing.parse_key_information(output)
        outcome.free_answer = parsing.parse_free_answer(output)
        return outcome


def majority_vote(answers: Sequence[int | None]) -> int | None:
    """The most frequent non-None answer; ties go to the answer that appeared first."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    best = max(counts.values())
    return next(a for a in answers if a is not None and counts[a] == best)


def longest_chain(chains: Sequence[str]) -> str:
    """Complexity-CoT's pick: the chain with the most non-empty lines (steps), then the most characters."""
    return max(chains, key=lambda c: (sum(1 for line in c.splitlines() if line.strip()), len(c)), default="")


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Naive(), NaiveThreeShot(), SelfCoT(), AutoCoTThreeShot(), SelfConsistency(), ComplexityCoT(),
        PlanAndSolveCoT(), DetectiveThinking(), DetectiveThinkingMultiRound(), NaiveKeyInfo(),
        NaiveKeyInfoThreeShot(), NaiveAnswer(), NaiveAnswerThreeShot(), FreeText(),
    )
}
METHOD_CHOICES = [(name, method.label) for name, method in METHODS.items()]


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None
