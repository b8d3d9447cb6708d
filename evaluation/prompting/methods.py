"""Prompting methods: each turns an item into chat messages and the outputs into an answer.

No Django inside. A method's ``solve`` gets the item as shown (:class:`Presented`),
its demonstrations and a ``generate(messages, call_key)`` coroutine; ``call_key``
names the call within the method (``"main"``, ``"sc-3"``, ``"mr-2"``) so that each
call has its own cache entry. The registry ``METHODS`` maps the public names
(``naive``, ``self-consistency``, ...) to instances.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from evaluation.errors import UnknownMethod
from evaluation.prompting.answer_reading import (
    AMBIGUOUS,
    OK,
    ParsedAnswer,
    parse_answer,
    parse_free_answer,
    parse_key_information,
    section_text,
)
from evaluation.prompting.prompts import Presented, render, templates_hash
from foundation.words import gettext, gettext_noop

# Bump when the way prompts are assembled changes (not the template texts: those are hashed).
ASSEMBLY_VERSION = "1"


#: The OpenAI API's finish_reason for an output cut at max_tokens.
TRUNCATED = "length"


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    #: The server's ``choices[0].finish_reason`` ("stop", TRUNCATED = cut at the token cap, ...); "" if not given.
    finish_reason: str = ""
    #: The attempts that failed before this answer: {"attempt", "error_class", "error", "wait_s"} each.
    failed_attempts: tuple = ()


Messages = list[dict[str, str]]
Generate = Callable[[Messages, str], Awaitable[Completion]]


@dataclass
class Outcome:
    """What one (item, sample) produced: every call made, the final output and its reading."""

    output: str = ""
    answer: ParsedAnswer | None = None  # None for free-text methods
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

    def read(self, shown: Presented, output: str) -> Outcome:
        self.output = output
        self.answer = parse_answer(output, shown.options, labels=shown.label_style)
        self.key_information = parse_key_information(output)
        return self


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


PROMPTS_KEPT = 4096  #: prompts a method keeps (a few MB of text at most); then it starts again

class Method:
    """Base class: a single prompt from ``template``, optionally after ``shots`` chat-turn demonstrations.

    ``shots`` is a parameter of the instance, not a subclass: ``Naive(shots=3)`` is the paper's
    "Naive (3-shot)" and is registered as ``naive-3shot`` (the base name plus ``-{shots}shot``), so
    the names users, stored runs and prompt versions know stay what they were.
    """

    base_name: str = ""
    base_label: str = ""
    family: str = ""  # the row group of paper Table 4
    template: str = "naive"
    free_text: bool = False
    default_k: int = 1
    #: ``max_tokens`` per call when the endpoint sets none (never unlimited): the answer-only prompts
    #: need a short key-information quote and a label; the reasoning methods get the paper's 2,000
    #: (Table 9, max_new_token).
    default_max_tokens: int = 512
    #: The shot counts a method accepts (0 = no demonstrations).
    allowed_shots: tuple[int, ...] = (0, 3)

    def __init__(self, *, shots: int = 0):
        if shots not in self.allowed_shots:
            raise ValueError(f"{self.base_name} takes {' or '.join(map(str, self.allowed_shots))} shots, not {shots}")
        self.shots = shots

    @property
    def name(self) -> str:
        return f"{self.base_name}-{self.shots}shot" if self.shots else self.base_name

    @property
    def label(self) -> str:
        """The method's name in the language of the page (the paper's English name outside a request)."""
        base = gettext(self.base_label)
        return gettext("%(method)s (%(shots)s-shot)", method=base, shots=self.shots) if self.shots else base

    @property
    def paper_label(self) -> str:
        """The paper's English name, for the exported tables."""
        return f"{self.base_label} ({self.shots}-shot)" if self.shots else self.base_label

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shots={self.shots})"

    @property
    def templates(self) -> tuple[str, ...]:
        names = (self.template,)
        if self.shots:
            names += ("demo_answer",)
        return names

    def version(self) -> str:
        return templates_hash(self.templates, salt=f"{self.name}:{ASSEMBLY_VERSION}")

    def requests_per_answer(self, k: int) -> int:
        """The model calls ``solve`` makes for one (item, sample) (what a launch costs in requests)."""
        return 1

    def extra_fields(self, shown: Presented) -> dict[str, str]:
        """Template values beyond the item's own (the given key information or answer)."""
        return {}

    def prompt(self, shown: Presented) -> str:
        """`render_prompt(shown)`, kept per shown item: a run's samples and demonstrations show the same item in the
        same order again (10 samples over 4 rotations: 4 prompts), and a prompt depends on nothing else."""
        if (cache := self.__dict__.get("_prompts")) is None:
            object.__setattr__(self, "_prompts", cache := {})  # some methods are frozen dataclasses
        try:
            if (found := cache.get(shown)) is None:
                if len(cache) >= PROMPTS_KEPT:
                    cache.clear()
                found = cache[shown] = self.render_prompt(shown)
        except TypeError:  # an item given with lists (tests, previews): not hashable, not kept
            return self.render_prompt(shown)
        return found

    def render_prompt(self, shown: Presented) -> str:
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
    base_name, base_label, family, template = "naive", "Naive", "Naive Questioning", "naive"


class NaiveKeyInfo(Method):
    base_name, base_label, family, template = ("naive-key-info", "Naive w/ Key Info",
                                               "Question with Extra Key Information", "naive_key_info")

    def extra_fields(self, shown: Presented) -> dict[str, str]:
        return {"key_information": shown.gold_key_information}


class NaiveAnswer(Method):
    base_name, base_label, family, template = ("naive-answer", "Naive w/ Answer",
                                               "Question with Extra Key Information", "naive_answer")

    def extra_fields(self, shown: Presented) -> dict[str, str]:
        return {"answer": shown.answer_label}


REASONING_MAX_TOKENS = 2000


class SelfCoT(Method):
    base_name, base_label, family, template = "self-cot", "Self-CoT", "Process Enhanced Method", "self_cot"
    default_max_tokens = REASONING_MAX_TOKENS


class AutoCoT(Method):
    """Table 14: worked demonstrations (thought = the demo's gold multi-hop reasoning) in one prompt."""

    base_name, base_label, family, template = "auto-cot", "Auto-CoT", "Process Enhanced Method", "auto_cot"
    allowed_shots, default_max_tokens = (3,), REASONING_MAX_TOKENS

    def __init__(self, *, shots: int = 3):
        super().__init__(shots=shots)

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

    base_name, base_label, family, template = ("self-consistency", "Self-Consistency", "Output Ensemble Method",
                                               "self_consistency")
    default_k, allowed_shots, default_max_tokens = 5, (0,), REASONING_MAX_TOKENS

    def requests_per_answer(self, k: int) -> int:
        return max(1, k)

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        messages = self.messages(shown, demos)
        readings = []
        for i in range(max(1, k)):
            text = outcome.record(f"sc-{i}", messages, await generate(messages, f"sc-{i}"))
            readings.append((text, parse_answer(text, shown.options, labels=shown.label_style)))
        winner = majority_vote([r.index if r.status == OK else None for _, r in readings])
        if winner is None:
            outcome.read(shown, readings[-1][0])
            if any(r.status == AMBIGUOUS for _, r in readings):
                outcome.answer = ParsedAnswer(AMBIGUOUS)
            return outcome
        text, reading = next((t, r) for t, r in readings if r.status == OK and r.index == winner)
        outcome.output = text
        outcome.answer = reading
        outcome.key_information = parse_key_information(text)
        return outcome


class ComplexityCoT(Method):
    """k Self-CoT samples; the one with the most reasoning steps feeds the Table 16 prompt."""

    base_name, base_label, family, template = ("complexity-cot", "Complexity-CoT", "Output Ensemble Method",
                                               "complexity_cot")
    default_k, allowed_shots, default_max_tokens = 5, (0,), REASONING_MAX_TOKENS

    @property
    def templates(self) -> tuple[str, ...]:
        return ("self_cot", self.template)

    def requests_per_answer(self, k: int) -> int:
        return max(1, k) + 1

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        first = [user(render("self_cot", **shown.fields()))]
        chains = []
        for i in range(max(1, k)):
            text = outcome.record(f"cot-{i}", first, await generate(first, f"cot-{i}"))
            chains.append(section_text(text, "thought") or text.strip())
        chain = longest_chain(chains)
        final = [user(render(self.template, chain_of_thought=chain, **shown.fields()))]
        output = outcome.record("answer", final, await generate(final, "answer"))
        return outcome.read(shown, output)


class PlanAndSolveCoT(Method):
    base_name, base_label, family, template = "ps-cot", "PS-CoT", "Multi-step Chain-of-Thought", "ps_cot"
    default_max_tokens = REASONING_MAX_TOKENS


class DetectiveThinking(Method):
    base_name, base_label, family, template = ("detective-thinking", "Detective Thinking Prompt",
                                               "Multi-step Chain-of-Thought", "detective_thinking")
    default_max_tokens = REASONING_MAX_TOKENS


class DetectiveThinkingMultiRound(Method):
    """The Detective Thinking stages (clues, connection, thought, summary, answer) as successive chat turns."""

    base_name, base_label, family = "detective-thinking-multiround", "DT Prompt w/ MR Chat", "Multi-step Chain-of-Thought"
    allowed_shots, default_max_tokens = (0,), REASONING_MAX_TOKENS
    stages = ("detective_mr_1_clues", "detective_mr_2_connection", "detective_mr_3_thought",
              "detective_mr_4_summarize", "detective_mr_5_answer")

    @property
    def templates(self) -> tuple[str, ...]:
        return self.stages

    def requests_per_answer(self, k: int) -> int:
        return len(self.stages)

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

    base_name, base_label, family, template = "free-text", "Free text (options hidden)", "Free text", "free_text"
    free_text, allowed_shots, default_max_tokens = True, (0,), 1024

    def render_prompt(self, shown: Presented) -> str:
        return render(self.template, context=shown.item.context, question=shown.item.question)

    async def solve(self, shown, demos, generate, *, k):
        outcome = Outcome()
        messages = self.messages(shown, demos)
        output = outcome.record("main", messages, await generate(messages, "main"))
        outcome.output = output
        outcome.key_information = parse_key_information(output)
        outcome.free_answer = parse_free_answer(output)
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


#: The registry: public name -> configured method. A new method (or shot count) is a line here, no migration.
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Naive(), Naive(shots=3), SelfCoT(), AutoCoT(shots=3), SelfConsistency(), ComplexityCoT(),
        PlanAndSolveCoT(), DetectiveThinking(), DetectiveThinkingMultiRound(), NaiveKeyInfo(),
        NaiveKeyInfo(shots=3), NaiveAnswer(), NaiveAnswer(shots=3), FreeText(),
    )
}
METHOD_CHOICES = [(name, method.paper_label) for name, method in METHODS.items()]
#: The names and families above, for the catalog (Method.label and the leaderboard say them translated).
METHOD_WORDS = (
    gettext_noop("Naive"), gettext_noop("Naive w/ Key Info"), gettext_noop("Naive w/ Answer"), gettext_noop("Self-CoT"),
    gettext_noop("Auto-CoT"), gettext_noop("Self-Consistency"), gettext_noop("Complexity-CoT"), gettext_noop("PS-CoT"),
    gettext_noop("Detective Thinking Prompt"), gettext_noop("DT Prompt w/ MR Chat"),
    gettext_noop("Free text (options hidden)"), gettext_noop("Naive Questioning"),
    gettext_noop("Question with Extra Key Information"), gettext_noop("Process Enhanced Method"),
    gettext_noop("Output Ensemble Method"), gettext_noop("Multi-step Chain-of-Thought"), gettext_noop("Free text"),
)


def method_choices() -> list[tuple[str, str]]:
    """The registry as form choices, each named in the language of the page."""
    return [(name, method.label) for name, method in METHODS.items()]


def get_method(name: str) -> Method:
    """The registry's method of this name; UnknownMethod (an Invalid of the method field) when there is none."""
    try:
        return METHODS[name]
    except KeyError:
        raise UnknownMethod(gettext("Unknown method %(name)s; choose from %(methods)s.", name=repr(name),
                                          methods=", ".join(METHODS)), field="method") from None
