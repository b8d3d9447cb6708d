"""One judgement: the prompt of a target, the model's reply (or the built-in judge), its labels (no Django).

:class:`JudgeSolver` has the shape of a prompting method (``solve(shown, demos,
generate, k=...)``), so the evaluation engine runs it like any model run: same client,
limiter, retries, response cache and concurrency. ``shown`` is a :class:`JudgeInput`.

Every aspect of the task gets one :class:`LabelDraft`. A reply that the strict parser
refuses gives *unscored* labels (no label, no belief) that keep the raw text and the
reason; a request that failed for good raises (the engine records it as an error and
no label is written, so a re-run tries it again).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluation.judge import beliefs, builtin, drafts
from evaluation.judge.beliefs import BUILTIN, SAMPLED, VERBAL
from evaluation.judge.client import unpack
from evaluation.judge.parsing import ReplyInvalid, parse_reply, read_verdicts
from evaluation.judge.specs import CLUE_GRAPH, DRAFT, FREE_TEXT, SCREENING, JudgeInput, get_task
from evaluation.judge.templates import render, template_hash
from evaluation.prompting.methods import TRUNCATED

SCORED, UNSCORED = "scored", "unscored"
NO_LOGPROBS = "the endpoint returned no log-probabilities for the verdict (belief unknown)."
SAMPLE_SEPARATOR = "\n\n----- sample {index} -----\n\n"


@dataclass
class LabelDraft:
    aspect: str
    label: str
    belief: float | None
    status: str
    payload: dict = field(default_factory=dict)


@dataclass
class JudgeOutcome:
    labels: list[LabelDraft]
    rationale: str = ""
    raw_output: str = ""
    exchanges: list[dict] = field(default_factory=list)
    tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    cached: bool = True
    #: A reply was cut at the judge's token cap (the server's finish_reason "length").
    truncated: bool = False

    def record(self, call_key: str, messages: list[dict], completion) -> tuple[str, tuple]:
        text, logprobs = unpack(completion)
        finish_reason = getattr(completion, "finish_reason", "")
        self.exchanges.append({"call": call_key, "messages": messages, "output": text, "finish_reason": finish_reason})
        self.truncated = self.truncated or finish_reason == TRUNCATED
        self.tokens += completion.tokens_in + completion.tokens_out
        self.latency_s += completion.latency_s
        self.attempts += completion.attempts
        self.cached = self.cached and completion.cached
        return text, logprobs


def _scored_or_without_belief(aspect: str, label: str, belief: float | None, payload: dict) -> LabelDraft:
    """A scored label, or, when no belief could be found, an unscored one that keeps the verdict in its payload
    (a scored label always has a belief: trust figures and triage need it)."""
    if belief is None:
        return LabelDraft(aspect, "", None, UNSCORED, {**payload, "verdict_without_belief": label})
    return LabelDraft(aspect, label, min(1.0, max(0.0, belief)), SCORED, payload)


class JudgeSolver:
    """Judges targets of one task with one belief source (``k`` replies per target when sampled)."""

    def __init__(self, *, task: str, belief_source: str, template: str = ""):
        self.spec = get_task(task)
        if belief_source not in beliefs.BELIEF_SOURCES:
            raise ValueError(f"unknown belief source {belief_source!r}")
        if task == CLUE_GRAPH and belief_source == SAMPLED:
            raise ValueError("a clue-graph draft has no majority: use logprob, verbal or builtin")
        self.task, self.belief_source = task, belief_source
        self.template = template or self.spec.template
        self.prompt_hash = builtin.builtin_hash(task) if belief_source == BUILTIN else template_hash(self.template)

    # -- prompts -------------------------------------------------------------
    def messages(self, data: JudgeInput) -> list[dict]:
        return [{"role": "user", "content": render(self.template, **self.spec.values(data))}]

    def _unscored(self, reason: str, raw_output: str = "", outcome: JudgeOutcome | None = None) -> JudgeOutcome:
        outcome = outcome or JudgeOutcome(labels=[])
        outcome.labels = [LabelDraft(aspect, "", None, UNSCORED) for aspect in self.spec.aspect_names]
        if outcome.truncated:
            reason = f"{reason} (the reply was cut at the judge's token cap: raise max_tokens)"
        outcome.rationale = f"unscored: {reason}"[:2000]
        outcome.raw_output = raw_output
        return outcome

    # -- the engine's interface ----------------------------------------------
    async def solve(self, shown: JudgeInput, demos: Sequence = (), generate=None, *, k: int = 1) -> JudgeOutcome:
        if self.task == FREE_TEXT and not shown.answer.strip():
            return self._unscored("the result has no answer to grade")
        if self.belief_source == BUILTIN:
            return self.solve_builtin(shown)
        messages = self.messages(shown)
        outcome = JudgeOutcome(labels=[])
        if self.belief_source == SAMPLED:
            texts = [outcome.record(f"judge-{i}", messages, await generate(messages, f"judge-{i}"))[0]
                     for i in range(max(1, k))]
            return self._read_samples(shown, texts, outcome)
        text, logprobs = outcome.record("judge", messages, await generate(messages, "judge"))
        return self._read_one(shown, text, logprobs, outcome)

    def _read_one(self, data: JudgeInput, text: str, logprobs: tuple, outcome: JudgeOutcome) -> JudgeOutcome:
        outcome.raw_output = text
        verbal = self.belief_source == VERBAL
        try:
            if self.task == CLUE_GRAPH:
                return self._read_draft(data, text, logprobs, outcome)
            read = read_verdicts(text, self.spec.aspects, confidence_required=verbal)
        except ReplyInvalid as exc:
            return self._unscored(str(exc), text, outcome)
        outcome.rationale = read.rationale
        for verdict in read.verdicts:
            if verbal:
                belief = verdict.confidence
            else:
                belief = beliefs.logprob_belief(logprobs, text, verdict.span, verdict.label,
                                                self.spec.choices(verdict.aspect))
            payload = {} if verdict.confidence is None else {"stated_confidence": verdict.confidence}
            outcome.labels.append(_scored_or_without_belief(verdict.aspect, verdict.label, belief, payload))
        if any(label.status == UNSCORED for label in outcome.labels):
            outcome.rationale = f"unscored: {NO_LOGPROBS} {outcome.rationale}".strip()
        return outcome

    def _read_draft(self, data: JudgeInput, text: str, logprobs: tuple, outcome: JudgeOutcome) -> JudgeOutcome:
        reply = parse_reply(text)
        draft = drafts.read_draft(reply)
        confidence = reply.get(("confidence",))
        if self.belief_source == VERBAL:
            if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
                raise ReplyInvalid("no confidence from 0 to 1")
            belief = float(confidence)
        else:
            belief = beliefs.sequence_belief(logprobs)
        payload = drafts.anchored_payload(draft, data.context)
        outcome.labels.append(_scored_or_without_belief("graph", DRAFT, belief, payload))
        if belief is None:
            outcome.rationale = f"unscored: {NO_LOGPROBS}"
        return outcome

    def _read_samples(self, data: JudgeInput, texts: list[str], outcome: JudgeOutcome) -> JudgeOutcome:
        outcome.raw_output = "".join((SAMPLE_SEPARATOR.format(index=i) if i else "") + t for i, t in enumerate(texts))
        readings, reasons = [], []
        for text in texts:
            try:
                readings.append(read_verdicts(text, self.spec.aspects))
            except ReplyInvalid as exc:
                readings.append(None)
                reasons.append(str(exc))
        if all(r is None for r in readings):
            return self._unscored(f"no sample could be read ({reasons[0]})", outcome.raw_output, outcome)
        for position, aspect in enumerate(self.spec.aspect_names):
            votes = [r.verdicts[position].label if r is not None else None for r in readings]
            label, share = beliefs.sampled_belief(votes)
            counts = {v: votes.count(v) for v in dict.fromkeys(v for v in votes if v is not None)}
            outcome.labels.append(LabelDraft(aspect, label, share, SCORED, {"votes": counts, "samples": len(votes)}))
        first = outcome.labels[0].label
        outcome.rationale = next(r.rationale for r in readings if r is not None and r.verdicts[0].label == first)
        return outcome

    # -- the built-in judge ----------------------------------------------------
    def solve_builtin(self, data: JudgeInput) -> JudgeOutcome:
        outcome = JudgeOutcome(labels=[], attempts=0, cached=False)
        if self.task == FREE_TEXT and not data.answer.strip():
            return self._unscored("the result has no answer to grade", "", outcome)
        if self.task == FREE_TEXT:
            label, belief, payload, outcome.rationale = builtin.judge_free_text(data)
            belief = None if belief is None else round(belief, 6)
            outcome.labels.append(_scored_or_without_belief("verdict", label, belief, payload))
            if belief is None:
                outcome.rationale = f"unscored: {outcome.rationale}"
        elif self.task == SCREENING:
            rows, outcome.rationale = builtin.screen(data)
            outcome.labels += [LabelDraft(aspect, label, round(belief, 6), SCORED) for aspect, label, belief in rows]
        else:
            clues, steps, belief = builtin.draft_clue_graph(data)
            if not clues:
                return self._unscored("the context has no sentence to quote", "", outcome)
            payload = drafts.anchored_payload(drafts.draft_from_parts(clues, steps), data.context)
            outcome.labels.append(LabelDraft("graph", DRAFT, belief, SCORED, payload))
            outcome.rationale = "Context sentences sharing most words with the question and the answer."
        outcome.raw_output = outcome.rationale
        return outcome

