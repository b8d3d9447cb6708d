"""Execute a judge run: the targets still without a label, through the evaluation engine, into belief labels.

Called by the Celery task (and in-process by ``judge --wait``). A model judge runs on
the same engine as a model run: the endpoint's client with its shared limiter and
retries, the response cache (read with the model runs' own reader, finish_reason included),
concurrency up to the endpoint's limit, and the model runs' circuit breaker (an endpoint that keeps
failing fails the judge run with the reason, after a bounded number of requests). Labels are
written only through annotation's ``belief_labels_record`` (INSERT ... ON CONFLICT DO
NOTHING on (queue, target, aspect, item version)), every few hundred milliseconds, so
a run killed mid-way keeps what it wrote and a re-run computes only the targets that
have no label yet: exactly one label per target and aspect. A request that failed for
good writes no label (the target counts as an error and is tried again next time).
A position probe (``JudgeRun.probe``) runs the same way; only where its labels come from and go differs
(`evaluation.execution.probe`: its targets with the options permuted, its own table, not the review queue).
"""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import BeliefLabel, Item, LabelStatus
from annotation.models.belief import DRAFT_ACCEPTED, DRAFT_DISCARDED, DRAFT_EDITED
from annotation.selectors.versions import judged_now_first
from annotation.services.belief import belief_labels_record
from evaluation.execution import probe as probe_execution
from evaluation.execution.chunks import endpoint_refusal, make_breaker, make_client, run_event_loop
from evaluation.execution.rows import cache_fetch as cache_fetch_rows
from evaluation.execution.streaming import close_thread, reading_thread, stream_jobs
from evaluation.judge import specs
from evaluation.judge.beliefs import LOGPROB, SAMPLED
from evaluation.judge.client import TOP_LOGPROBS, LogprobChatClient, pack_for_cache
from evaluation.judge.solving import JudgeOutcome, JudgeSolver
from evaluation.judge.specs import JudgeInput
from evaluation.model_calls.clients import EndpointDown
from evaluation.model_calls.engine import RAMP_SPACING_S, Engine, Job, JobResult
from evaluation.models import CachedResponse, Result, RunStatus
from evaluation.models.item_versions import CONTENT, ItemAtVersion, current_content, items_at_versions
from evaluation.models.judge import JudgeConfig, JudgeRun
from evaluation.prompting.methods import Completion

BUILTIN_BATCH = 200
CLUE_GRAPH_REVIEW_CHOICES = [DRAFT_ACCEPTED, DRAFT_EDITED, DRAFT_DISCARDED]


def judge_params(config: JudgeConfig) -> dict:
    """The generation parameters of a model judge's requests (also part of the response-cache key)."""
    params = config.endpoint.generation_params()
    if config.temperature is not None:
        params["temperature"] = config.temperature
    if config.belief_source == SAMPLED:
        params.pop("seed", None)  # k samples with one seed would be one sample k times
    if config.belief_source == LOGPROB:
        params.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
    return params


def _item_input(target: str, item: ItemAtVersion, answer: str = "") -> JudgeInput:
    return JudgeInput(target=target, item_id=item.id, item_version=item.content_version, context=item.context,
                      question=item.question, options=tuple(item.options), answer_index=item.answer_index,
                      evidence=item.evidence, reasoning=item.reasoning, answer=answer)


def load_inputs(targets: list[str]) -> list[JudgeInput]:
    """What the judge sees of each target, in the order given (targets whose row is gone are skipped).

    A result is judged against the item as the model was asked it: its content at the result's ``item_version``
    (the revision snapshot), labelled with that version, never the item's current text; a result whose version
    no revision records is skipped (it counts among the judge run's errors: no label)."""
    kinds: dict[str, list[int]] = {"result": [], "item": []}
    for target in targets:
        kind, _, pk = target.partition(":")
        kinds[kind].append(int(pk))
    found: dict[str, JudgeInput] = {}
    results = list(Result.objects.filter(pk__in=kinds["result"]).select_related("item")
                   .only("pk", "item_version", "free_answer", *(f"item__{name}" for name in CONTENT)))
    asked = items_at_versions(((r.item_id, r.item_version) for r in results),
                              current={r.item_id: r.item for r in results})
    for result in results:
        if (item := asked.get((result.item_id, result.item_version))) is not None:
            found[f"result:{result.pk}"] = _item_input(f"result:{result.pk}", item, result.free_answer)
    for item in Item.objects.filter(pk__in=kinds["item"]):
        found[f"item:{item.pk}"] = _item_input(f"item:{item.pk}", current_content(item))
    return [found[t] for t in targets if t in found]


def missing_inputs(judge_run: JudgeRun) -> list[JudgeInput]:
    """The targets of a judge run that lack a label for some aspect at the version they are judged at: a result's
    own ``item_version`` (what the model was asked), an item's current content version."""
    inputs = load_inputs(judge_run.targets)
    if judge_run.probe:  # a position probe: its own labels, the options permuted
        return probe_execution.probe_missing_inputs(judge_run, inputs)
    aspects = set(specs.get_task(judge_run.task).aspect_names)
    have: dict[tuple[str, int], set[str]] = {}
    for target, aspect, version in BeliefLabel.objects.filter(
            queue_id=judge_run.config.queue_id, target__in=judge_run.targets).values_list("target", "aspect",
                                                                                        "item_version"):
        have.setdefault((target, version), set()).add(aspect)
    return [i for i in inputs if not aspects <= have.get((i.target, i.item_version), set())]


def label_rows(judge_run: JudgeRun, solver: JudgeSolver, data: JudgeInput, outcome: JudgeOutcome) -> list[dict]:
    spec = solver.spec
    return [{
        "item_id": data.item_id, "item_version": data.item_version, "task": judge_run.task, "target": data.target,
        "aspect": label.aspect, "label": label.label,
        "choices": CLUE_GRAPH_REVIEW_CHOICES if spec.name == specs.CLUE_GRAPH else list(spec.choices(label.aspect)),
        # A free-text label carries the answer it graded, so a reviewer sees what the judge saw.
        "payload": {**label.payload, "answer": data.answer} if spec.name == specs.FREE_TEXT else label.payload,
        "belief": label.belief, "belief_source": solver.belief_source,
        "status": label.status, "rationale": outcome.rationale, "raw_output": outcome.raw_output,
        "prompt_hash": solver.prompt_hash, "producer": judge_run.producer, "tokens": outcome.tokens,
        "latency_ms": int(round(outcome.latency_s * 1000)),
    } for label in outcome.labels]


def record_labels(judge_run: JudgeRun, rows: list[dict]) -> None:
    """Labels go to the configuration's review queue; a position probe's to its own table, never reviewed."""
    if judge_run.probe:
        probe_execution.probe_labels_record(judge_run=judge_run, rows=rows)
    else:
        belief_labels_record(queue=judge_run.config.queue, rows=rows)


def _is_cancelled(judge_run_id: int) -> bool:
    return JudgeRun.objects.filter(pk=judge_run_id, status=RunStatus.CANCELLED).exists()


def execute_judge_run(*, judge_run_id: int) -> JudgeRun:
    """Compute the missing labels of a judge run, then record its counts (safe to run twice)."""
    close_old_connections()
    judge_run = JudgeRun.objects.select_related("config__endpoint", "config__queue").get(pk=judge_run_id)
    if judge_run.status in (RunStatus.CANCELLED, RunStatus.FINISHED):
        return judge_run
    clock = _WallClock(judge_run.pk)
    if not JudgeRun.objects.filter(pk=judge_run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
            status=RunStatus.RUNNING, started_at=timezone.now(), finished_at=None):
        return judge_run  # cancelled meanwhile
    solver = JudgeSolver(task=judge_run.task, belief_source=judge_run.config.belief_source,
                         template=judge_run.config.template_for(judge_run.task))
    pending = missing_inputs(judge_run)
    errors: list[str] = []
    if pending and judge_run.config.is_builtin:
        _execute_builtin(judge_run, solver, pending, clock)
    elif pending and (refusal := endpoint_refusal(judge_run.config.endpoint)):
        errors.append(refusal)  # no request: the run ends with it as its last error
    elif pending:
        try:
            run_event_loop(_execute_model(judge_run, solver, pending, errors, clock))
        except EndpointDown as exc:  # the circuit breaker opened: the judge run fails with its reason, as a run does
            errors.append(str(exc))
            JudgeRun.objects.filter(pk=judge_run.pk, status=RunStatus.RUNNING).update(
                status=RunStatus.FAILED, finished_at=timezone.now())
    return refresh_judge_run(judge_run_id=judge_run.pk, wall_s=clock.take(),
                             last_error=errors[-1] if errors else "")


class _WallClock:
    """An execution's wall time, added to its judge run's `wall_s` with each batch of labels it writes (in the same
    transaction): a worker killed mid-run leaves its time up to its last batch counted, and the execution that
    heals the run adds its own. The end of the execution adds the rest (`refresh_judge_run`)."""

    def __init__(self, judge_run_id: int):
        self.judge_run_id, self.last = judge_run_id, time.monotonic()

    def take(self) -> float:
        """The seconds since the last take (or the start)."""
        now = time.monotonic()
        elapsed, self.last = now - self.last, now
        return elapsed

    def credit(self) -> None:
        JudgeRun.objects.filter(pk=self.judge_run_id).update(
            wall_s=Coalesce(F("wall_s"), Value(0.0)) + Value(round(self.take(), 3)))


def _execute_builtin(judge_run: JudgeRun, solver: JudgeSolver, pending: list[JudgeInput], clock: _WallClock) -> None:
    for start in range(0, len(pending), BUILTIN_BATCH):
        if _is_cancelled(judge_run.pk):
            return
        rows = [row for data in pending[start:start + BUILTIN_BATCH]
                for row in label_rows(judge_run, solver, data, solver.solve_builtin(data))]
        with transaction.atomic():
            record_labels(judge_run, rows)
            clock.credit()


def _write(judge_run: JudgeRun, solver: JudgeSolver, results: list[JobResult], errors: list[str],
           clock: _WallClock) -> None:
    rows = []
    for result in results:
        if result.outcome is None:
            errors.append(f"{result.job.shown.target}: {result.error}"[:1000])
        else:
            rows += label_rows(judge_run, solver, result.job.shown, result.outcome)
    with transaction.atomic():
        if rows:
            record_labels(judge_run, rows)
        clock.credit()
    cached = [CachedResponse(key=key, model=judge_run.config.endpoint.model, text=pack_for_cache(c),
                             tokens_in=c.tokens_in, tokens_out=c.tokens_out, finish_reason=(c.finish_reason or "")[:30])
              for r in results if r.outcome is not None and r.new_cache for key, c in r.new_cache.items()]
    if cached and judge_run.config.endpoint.use_cache:
        CachedResponse.objects.bulk_create(cached, ignore_conflicts=True)


async def _execute_model(judge_run: JudgeRun, solver: JudgeSolver, pending: list[JudgeInput],
                         errors: list[str], clock: _WallClock) -> None:
    """The judge's requests through the model runs' loop (``streaming.stream_jobs``): engine, client, limiter,
    breaker, cache reader, infrastructure errors, streamed writes and cancellation are theirs."""
    db = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"judge-run-{judge_run.pk}-db")
    reads = reading_thread(f"judge-run-{judge_run.pk}")  # cache lookups, never behind a write
    try:
        await _stream_model(judge_run, solver, pending, errors, db, reads, clock)
    finally:
        close_thread(reads)
        db.shutdown(wait=True)  # stream_jobs closed it, unless the client could not be built (then it never ran)


async def _stream_model(judge_run: JudgeRun, solver: JudgeSolver, pending: list[JudgeInput], errors: list[str],
                        db: ThreadPoolExecutor, reads: ThreadPoolExecutor, clock: _WallClock) -> None:
    from evaluation.execution.infrastructure import INFRASTRUCTURE_ERRORS  # imports redis: not at URL loading

    config, endpoint = judge_run.config, judge_run.config.endpoint
    loop = asyncio.get_running_loop()
    params = judge_params(config)
    client = make_client(endpoint, seed=0, params=params, breaker=make_breaker(), client_class=LogprobChatClient)

    async def cache_fetch(keys: list[str]) -> dict[str, Completion]:
        return await loop.run_in_executor(reads, cache_fetch_rows, keys)  # the model runs' own cache read

    engine = Engine(method=solver, client=client, k=config.samples, concurrency=endpoint.max_concurrency,
                    base_url=endpoint.base_url, model=endpoint.model, params=params,
                    cache_fetch=cache_fetch if endpoint.use_cache else None,
                    ramp_spacing_s=float(getattr(settings, "EVALUATION_RAMP_SPACING_S", RAMP_SPACING_S)),
                    infrastructure_errors=INFRASTRUCTURE_ERRORS)
    jobs = [Job(item_id=data.item_id, sample_index=0, shown=data) for data in pending]
    await stream_jobs(engine=engine, jobs=jobs, db=db, write=lambda batch: _write(judge_run, solver, batch, errors, clock),
                      is_cancelled=lambda: _is_cancelled(judge_run.pk), close_client=client.close, count=len(jobs))


def judge_run_counts(judge_run: JudgeRun) -> dict:
    """n, scored, unscored, errors (targets), label counts and mean belief (scored labels), from the stored labels.

    A target counts with its labels at one content version: its item's now if judged, else the latest judged
    (`judged_now_first`); error labels only without others."""
    labels: dict[str, list[tuple[int, str, str, str, float | None]]] = {}
    rank: dict[tuple[str, int], tuple[bool, int]] = {}
    stored = (probe_execution.probe_labels(judge_run) if judge_run.probe else BeliefLabel.objects.filter(
        queue_id=judge_run.config.queue_id, target__in=judge_run.targets, task=judge_run.task))
    for pk, target, version, now, aspect, label, status, belief in stored.values_list(
            "pk", "target", "item_version", "item__content_version", "aspect", "label", "status", "belief"):
        labels.setdefault(target, []).append((version, aspect, label, status, belief))
        rank[(target, version)] = max(rank.get((target, version), (False, 0)), judged_now_first(version, now, pk))
    multi = len(specs.get_task(judge_run.task).aspects) > 1
    scored = unscored = 0
    counts: Counter = Counter()
    beliefs: list[float] = []
    for target, rows in labels.items():
        # An error label counts only when the target has no other (a label at a version its result was not asked
        # at is one: evaluation migration 0014).
        rows = [r for r in rows if r[3] != LabelStatus.ERROR] or rows
        chosen = max((r[0] for r in rows), key=lambda version: rank[(target, version)])
        rows = [r for r in rows if r[0] == chosen]
        if all(r[3] == LabelStatus.SCORED for r in rows):
            scored += 1
        else:
            unscored += 1
        for _, aspect, label, status, belief in rows:
            if status == LabelStatus.SCORED:
                counts[f"{aspect}:{label}" if multi else label] += 1
                beliefs.append(belief)
    n = len(judge_run.targets)
    return {"n": n, "scored": scored, "unscored": unscored, "errors": n - scored - unscored,
            "label_counts": dict(sorted(counts.items())),
            "mean_belief": round(sum(beliefs) / len(beliefs), 6) if beliefs else None}


def refresh_judge_run(*, judge_run_id: int, wall_s: float | None = None, last_error: str = "") -> JudgeRun:
    """Store a judge run's counts; it is finished (unless cancelled meanwhile)."""
    judge_run = JudgeRun.objects.select_related("config").get(pk=judge_run_id)
    counts = judge_run_counts(judge_run)
    fields = dict(counts, last_error=last_error)
    if wall_s is not None:  # a resume's execution adds to the earlier ones
        fields["wall_s"] = Coalesce(F("wall_s"), Value(0.0)) + Value(round(wall_s, 3))
    JudgeRun.objects.filter(pk=judge_run_id).update(**fields)
    JudgeRun.objects.filter(pk=judge_run_id, status__in=[RunStatus.RUNNING, RunStatus.QUEUED]).update(
        status=RunStatus.FINISHED, finished_at=timezone.now())
    judge_run.refresh_from_db()
    return judge_run
