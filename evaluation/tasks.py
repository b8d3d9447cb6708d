"""Celery tasks of the evaluation app: they take ids, re-fetch, and are safe to run twice (acks_late)."""
from __future__ import annotations

from celery import shared_task

from . import execution
from .judge.execution import execute_judge_run


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_chunk(run_id: int, item_ids: list[int]) -> dict:
    """Compute the missing or failed rows of these items of a run (rows already done are skipped)."""
    report = execution.execute_chunk(run_id=run_id, item_ids=item_ids)
    return {"run": run_id, "jobs": report.jobs, "written": report.written, "errors": report.errors}


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def judge_run_execute(judge_run_id: int) -> dict:
    """Compute the labels a judge run still lacks (targets already labelled are skipped), then its counts."""
    judge_run = execute_judge_run(judge_run_id=judge_run_id)
    return {"judge_run": judge_run_id, "status": judge_run.status, "scored": judge_run.scored}
