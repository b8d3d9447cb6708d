"""Handing a run's work to the Celery workers: chunk tasks and judge-run tasks, sent by task name.

Services (launch, resume) and the recovery pass both queue work through here, so neither imports the
task module (which imports them) at its own import: the tasks are looked up by name in the app's registry, their
module imported at the first lookup.
"""
from __future__ import annotations

import importlib

from celery import current_app
from django.db import transaction

RUN_CHUNK_TASK = "evaluation.tasks.run_chunk"
JUDGE_RUN_TASK = "evaluation.tasks.judge_run_execute"


def _task(name: str):
    """The registered task of this name. The registry fills as task modules are imported: a process that has
    imported none (a web server, a management command) imports the task's own module first. Not every app's,
    as a worker does at start: Celery's Django fixup would then run all of Django's system checks, a quarter of
    a second in the first launch of each web process."""
    if name not in current_app.tasks:
        importlib.import_module(name.rpartition(".")[0])
    return current_app.tasks[name]


def chunks_enqueue(run, item_ids: list[int]) -> None:
    """Queue the chunk tasks of these items of a run, after the current transaction commits (at once
    outside one), `run.chunk_size` items per chunk."""
    for start in range(0, len(item_ids), run.chunk_size):
        chunk = list(item_ids[start:start + run.chunk_size])
        transaction.on_commit(lambda chunk=chunk: _task(RUN_CHUNK_TASK).delay(run.pk, chunk))


def judge_run_enqueue(judge_run) -> None:
    """Queue the task that computes a judge run's missing labels, after the current transaction commits."""
    judge_run_id = judge_run.pk
    transaction.on_commit(lambda: _task(JUDGE_RUN_TASK).delay(judge_run_id))
