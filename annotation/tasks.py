"""Celery tasks of the annotation app (idempotent, so acks_late is safe)."""
from celery import shared_task

from annotation.services import leases_expire


@shared_task(acks_late=True)
def leases_expire_sweep() -> int:
    """Give back expired annotation leases (idempotent; lease_next also does it lazily)."""
    return leases_expire()
