"""Celery tasks of the evaluation app: they take ids, re-fetch, and are safe to run twice (acks_late)."""
from __future__ import annotations

from celery import shared_task

from . import execution


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_chunk(run_id: int, item_ids: list[int]) -> dict:
    """Compute the missing or failed rows of these items of a run (rows already done are skipped)."""
    report = execution.execute_chunk(run_id=run_id, item_ids=item_ids)
    return {"run": run_id, "jobs": report.jobs, "written": report.written, "errors": report.errors}
