"""Django's PostgreSQL backend, whose connection pool checks a connection without a round trip.

With a pool and CONN_HEALTH_CHECKS, Django 5.2 gives psycopg_pool ``ConnectionPool.check_connection`` as the
check, an empty query at every checkout, and refuses a ``check`` of our own in the pool's options (it passes the
keyword itself). So the pool it builds gets `foundation.pool_check.check_idle_connection` instead, once, when it
is built: same verdict on a dead connection, no round trip on a healthy one. psycopg_pool keeps the check in
``_check`` (3.2 and 3.3); tests/foundation/test_pool_check.py fails if a pool built here does not use ours.
"""
from __future__ import annotations

from django.db.backends.postgresql import base

from foundation.pool_check import check_idle_connection


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        if pool is not None and pool._check is not None and pool._check is not check_idle_connection:
            pool._check = check_idle_connection  # CONN_HEALTH_CHECKS asked for a check: this one
        return pool
