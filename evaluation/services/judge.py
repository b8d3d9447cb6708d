"""Writes of the judge: judge configurations, launching, resuming and cancelling judge runs."""
from __future__ import annotations

import random

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Item
from annotation.services.belief import belief_queue_for
from evaluation.execution import heartbeats, queueing
from evaluation.execution import judge as execution
from evaluation.judge import probe, specs
from evaluation.judge.beliefs import BUILTIN
from evaluation.models import EndpointKind, ModelEndpoint, Result, Run, RunStatus
from evaluation.models.judge import JudgeConfig, JudgeRun
from foundation.errors import Conflict, Invalid, NotFound
from foundation.words import gettext

BUILTIN_CONFIG = "builtin"
#: The review policy of the built-in judge's queue (annotation's defaults otherwise).
BUILTIN_QUEUE_POLICY = {"description": "Labels of the built-in offline judge (string similarity, heuristics)."}


def _invalid(exc: ValidationError) -> Invalid:
    return Invalid(errors=exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages})


@transaction.atomic
def judge_config_create(*, name: str, belief_source: str, task: str = "", endpoint: ModelEndpoint | None = None,
                        template: str = "", samples: int = 1, temperature: float | None = None,
                        description: str = "", user=None, **queue_policy) -> JudgeConfig:
    """A judge configuration and its review queue (same name; ``queue_policy``: order, random_share,
    reviewers_per_label, blind, accept_threshold, lease_minutes)."""
    if JudgeConfig.objects.filter(name=name).exists():
        raise Conflict(gettext("a judge configuration called %(name)s exists", name=repr(name)), field="name")
    if endpoint is not None and endpoint.kind != EndpointKind.OPENAI:
        raise Invalid(gettext("a judge endpoint is an OpenAI-compatible API (the built-in judge needs none)"), field="endpoint")
    config = JudgeConfig(name=name, belief_source=belief_source, task=task, endpoint=endpoint, template=template,
                         samples=samples, temperature=temperature, description=description, created_by=user)
    try:
        config.full_clean(exclude=["queue"])
    except ValidationError as exc:
        raise _invalid(exc) from None
    config.queue = belief_queue_for(name=name, **({"description": description} if description else {}), **queue_policy)
    config.save()
    return config


def judge_config_builtin() -> JudgeConfig:
    """The built-in offline judge (any task), created on first use."""
    config = JudgeConfig.objects.select_related("queue").filter(name=BUILTIN_CONFIG).first()
    if config is not None:
        return config
    try:
        return judge_config_create(name=BUILTIN_CONFIG, belief_source=BUILTIN, **BUILTIN_QUEUE_POLICY)
    except (Conflict, IntegrityError):  # created meanwhile by another process
        return JudgeConfig.objects.select_related("queue").get(name=BUILTIN_CONFIG)


def judge_config_get(*, name: str) -> JudgeConfig:
    if name == BUILTIN_CONFIG:
        return judge_config_builtin()
    config = JudgeConfig.objects.select_related("endpoint", "queue").filter(name=name).first()
    if config is None:
        raise NotFound(gettext("no judge configuration %(name)s", name=repr(name)), field="config")
    return config


def _targets(*, task: str, run: Run | None, split: str, limit: int | None) -> list[str]:
    if task == specs.FREE_TEXT:
        if run is None:
            raise Invalid(gettext("a free-text judge run judges the results of a run"), field="run")
        if run.method != specs.FREE_TEXT:
            raise Invalid(gettext("run %(id)s is a %(method)s run: only free-text answers are judged", id=run.pk,
                                  method=run.method), field="run")
        ids = Result.objects.filter(run=run, error="").order_by("item_id", "sample_index").values_list("pk", flat=True)
        targets = [f"result:{pk}" for pk in ids]
    else:
        if run is not None:
            raise Invalid(gettext("%(task)s judges items of a split, not the results of a run", task=task), field="run")
        if not split:
            raise Invalid(gettext("a %(task)s judge run needs a split", task=task), field="split")
        targets = [f"item:{pk}" for pk in Item.objects.filter(split=split).order_by("pk").values_list("pk", flat=True)]
    if limit is not None:
        if limit < 1:
            raise Invalid(gettext("the limit must be at least 1"), field="limit")
        targets = targets[:limit]
    if not targets:
        raise Invalid(gettext("nothing to judge: the run has no answered results") if task == specs.FREE_TEXT
                      else gettext("no items in split %(split)s", split=repr(split)))
    return targets


@transaction.atomic
def judge_run_launch(*, config: JudgeConfig, task: str = "", run: Run | None = None, split: str = "",
                     limit: int | None = None, user=None, note: str = "", enqueue: bool = True) -> JudgeRun:
    """A judge run over a fixed list of targets (resolved now), queued on Celery after commit.

    The task is the config's own, or, for the built-in judge, free-text with a run and
    the given task (screening or clue-graph) with a split."""
    task = task or config.task or (specs.FREE_TEXT if run is not None else "")
    if task not in specs.JUDGE_TASKS:
        raise Invalid(gettext("the task is one of %(tasks)s", tasks=", ".join(specs.JUDGE_TASKS)), field="task")
    if task not in config.tasks():
        raise Invalid(gettext("judge configuration %(name)s judges %(judged)s, not %(task)s", name=config.name,
                              judged=config.task, task=task), field="task")
    targets = _targets(task=task, run=run, split=split, limit=limit)
    judge_run = JudgeRun.objects.create(config=config, task=task, target_run=run, split=split if run is None else "",
                                        limit=limit, targets=targets, n=len(targets), created_by=user, note=note)
    if enqueue:
        queueing.judge_run_enqueue(judge_run)
    return judge_run


@transaction.atomic
def judge_run_resume(*, judge_run: JudgeRun, enqueue: bool = True) -> JudgeRun:
    """Queue a judge run again: only its targets without a label are computed.

    Refused while an execution of it is alive (running, or a worker's redelivered copy): a second execution
    would send the same requests again. A run whose worker died (no live execution) may be resumed at once."""
    judge_run = JudgeRun.objects.select_for_update().get(pk=judge_run.pk)
    if heartbeats.execution_alive(heartbeats.judge_run_key(judge_run.pk)):
        raise Conflict(gettext("Judge run %(id)s is running; it resumes by itself if its worker stops.", id=judge_run.pk),
                       code="judge_run_running")
    judge_run.status, judge_run.finished_at = RunStatus.QUEUED, None
    judge_run.save(update_fields=["status", "finished_at"])
    if enqueue:
        queueing.judge_run_enqueue(judge_run)
    return judge_run


@transaction.atomic
def judge_run_cancel(*, judge_run: JudgeRun) -> JudgeRun:
    """Stop a judge run: no new requests are sent (labels already recorded stay)."""
    judge_run = JudgeRun.objects.select_for_update().get(pk=judge_run.pk)
    if not judge_run.is_active:
        raise Conflict(gettext("judge run %(id)s is %(status)s", id=judge_run.pk, status=judge_run.get_status_display()))
    judge_run.status, judge_run.finished_at = RunStatus.CANCELLED, timezone.now()
    judge_run.save(update_fields=["status", "finished_at"])
    return judge_run


#: How many targets a position probe judges again unless told otherwise.
PROBE_SAMPLE = 50


@transaction.atomic
def judge_probe_launch(*, judge_run: JudgeRun, kind: str = probe.REVERSED, sample: int = PROBE_SAMPLE,
                       seed: int = 0, user=None, enqueue: bool = True) -> JudgeRun:
    """A position probe of a judge run: a seeded uniform sample of its targets, judged again by the same
    configuration with the options permuted (``kind``), executed like a judge run (Celery, the same engine); its
    labels go to JudgeProbeLabel and are compared with the queue's labels on the quality card."""
    if judge_run.probe:
        raise Invalid(gettext("this judge run is itself a probe: probe the judge run it permuted"), field="judge_run")
    if judge_run.task not in probe.PROBED_TASKS:
        raise Invalid(gettext(probe.NOT_PROBED.get(judge_run.task, judge_run.task)), field="judge_run")
    if kind not in probe.PERMUTATIONS:
        raise Invalid(gettext("the permutation is one of %(kinds)s", kinds=", ".join(probe.PERMUTATIONS)), field="kind")
    if sample < 1:
        raise Invalid(gettext("the sample must be at least 1 target"), field="sample")
    targets = list(judge_run.targets)
    chosen = sorted(random.Random(seed).sample(range(len(targets)), min(sample, len(targets))))
    if not chosen:
        raise Invalid(gettext("judge run %(id)s has no target", id=judge_run.pk), field="judge_run")
    probed = JudgeRun.objects.create(
        config=judge_run.config, task=judge_run.task, target_run=judge_run.target_run, split=judge_run.split,
        targets=[targets[i] for i in chosen], n=len(chosen), probe=kind, created_by=user,
        note=f"position probe ({kind}) of judge run {judge_run.pk}: {len(chosen)} of {len(targets)} targets, "
             f"seed {seed}")
    if enqueue:
        queueing.judge_run_enqueue(probed)
    return probed


def judge_run_execute_in_process(*, judge_run: JudgeRun) -> JudgeRun:
    """Compute a judge run's missing labels in this process (no worker needed), alone like a worker's."""
    with heartbeats.sole_execution(heartbeats.judge_run_key(judge_run.pk)) as mine:
        if not mine:
            raise Conflict(gettext("Judge run %(id)s is running elsewhere.", id=judge_run.pk), code="judge_run_running")
        execution.execute_judge_run(judge_run_id=judge_run.pk)
    judge_run.refresh_from_db()
    return judge_run
