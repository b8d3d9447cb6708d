"""Celery tasks for studies: the periodic sweep that closes attempts whose deadline has passed."""
from celery import shared_task

from studies.services import attempts_sweep


@shared_task(name="studies.tasks.sweep_expired_attempts")
def sweep_expired_attempts() -> list[int]:
    """Expire every running attempt past its deadline (plus grace), even when no browser is left. Idempotent."""
    return attempts_sweep()

