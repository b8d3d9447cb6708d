"""Handing a run's work to the Celery workers: chunk tasks and judge-run tasks, sent by task name.

Services (launch, resume) and the recovery pass both queue work through here, so neither imports the
task module (which imports them) at its own import: the tasks are looked up by name in the app's registry, their
module imported at the first lookup.
"""
from __future__ import annotations

import importlib

from celery import current_app
from django.conf import settings
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


def load_tasks() -> list[str]:
    """Import the modules of every task sent from here (no connection is opened): a web server calls it before it
    forks its workers (docker/gunicorn.conf.py), so that a worker's first launch does not import them (about 45 ms
    of its response). Also what the first message sent would load: the result backend's class (Celery finds it
    among the installed packages' entry points, ~20 ms) and the broker's transport module (~25 ms). Returns the task
    names."""
    names = [RUN_CHUNK_TASK, JUDGE_RUN_TASK]
    for name in names:
        _task(name)
    _ = current_app.backend  # resolved and kept by the app (not connected): the disabled or the configured backend
    connection = current_app.connection_for_write()
    try:
        connection.get_transport_cls()  # the transport's module imported; nothing connects before a message is sent
    finally:
        connection.release()
    return names


def split_evenly(item_ids: list[int], *, most: int, processes: int) -> list[list[int]]:
    """The items in consecutive chunks of at most ``most``, as many as a multiple of ``processes`` (short of one
    item each), their sizes within one of each other: the processes start together and end together."""
    if not item_ids:
        return []
    count = -(-len(item_ids) // max(1, most))
    count = min(len(item_ids), -(-count // processes) * processes)
    size, larger = divmod(len(item_ids), count)
    chunks, start = [], 0
    for index in range(count):
        end = start + size + (index < larger)
        chunks.append(list(item_ids[start:end]))
        start = end
    return chunks


def chunks_enqueue(run, item_ids: list[int]) -> None:
    """Queue the chunk tasks of these items of a run, after the current transaction commits (at once
    outside one): at most `run.chunk_size` items per chunk, split evenly over the worker processes
    (settings.EVALUATION_WORKER_PROCESSES)."""
    for chunk in split_evenly(list(item_ids), most=run.chunk_size, processes=settings.EVALUATION_WORKER_PROCESSES):
        transaction.on_commit(lambda chunk=chunk: _task(RUN_CHUNK_TASK).delay(run.pk, chunk))


def judge_run_enqueue(judge_run) -> None:
    """Queue the task that computes a judge run's missing labels, after the current transaction commits."""
    judge_run_id = judge_run.pk
    transaction.on_commit(lambda: _task(JUDGE_RUN_TASK).delay(judge_run_id))
