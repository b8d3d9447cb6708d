"""Celery tasks for studies: the periodic sweep that closes attempts whose deadline has passed."""
from celery import shared_task

from .services import attempt_expire, attempts_sweep


@shared_task(name="studies.tasks.sweep_expired_attempts")
def sweep_expired_attempts() -> list[int]:
    """Expire every running attempt past its deadline (plus grace), even when no browser is left. Idempotent."""
    return attempts_sweep()


@shared_task(name="studies.tasks.expire_attempt")
def expire_attempt(attempt_id: int) -> str:
    """Expire one attempt now (researcher's button). Idempotent."""
    return attempt_expire(attempt_id=attempt_id).status
