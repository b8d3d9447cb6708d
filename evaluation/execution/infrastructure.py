"""The errors of the infrastructure (the database, Redis, the broker), not of a model or an item.

One list for the run loop and its Celery tasks: a chunk never stores one of these as a failed row (it leaves
`execute_chunk` as it is; each batch of rows already written is one whole transaction), and the task that ran
the chunk retries it on them, with backoff (settings EVALUATION_CHUNK_RETRY_BACKOFF_S, ..._MAX_RETRIES).
Should the retries run out, the periodic reconciliation re-enqueues the chunk's items.
"""
from __future__ import annotations

import kombu.exceptions
import psycopg
import redis.exceptions
from django.db import Error as DatabaseError

INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.RedisError,  # includes ConnectionError, TimeoutError, BusyLoadingError (a restarting Redis)
    kombu.exceptions.OperationalError,  # publishing a task while the broker is away
    DatabaseError,  # Django's wrapper of every database error (OperationalError, InterfaceError, ...)
    psycopg.Error,  # the same, raised by psycopg directly
)
