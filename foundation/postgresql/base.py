"""Django's PostgreSQL backend, whose connection pool checks a connection without a round trip, and tries the next
one at once when one is dead.

With a pool and CONN_HEALTH_CHECKS, Django 5.2 gives psycopg_pool ``ConnectionPool.check_connection`` as the
check, an empty query at every checkout, and refuses a ``check`` of our own in the pool's options (it passes the
keyword itself). psycopg_pool runs the check inside its checkout, which sleeps 1, 2, 4, 8 s between dead
connections. So the pool built here has no check of its own (``_check``, psycopg_pool 3.2 and 3.3), and a
connection is checked as it is taken, by `foundation.pool_check.checked_checkout` with
`foundation.pool_check.check_idle_connection`: same verdict on a dead connection, no round trip on a healthy one,
no wait before the next. tests/foundation/test_pool_check.py fails if a pool built here still checks by itself.
"""
from __future__ import annotations

from django.db.backends.postgresql import base

from foundation.pool_check import checked_checkout


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        if pool is not None and pool._check is not None:
            pool._check = None  # CONN_HEALTH_CHECKS asked for a check: get_new_connection checks
        return pool

    def get_new_connection(self, conn_params):
        pool = self.pool
        if pool is None or not self.settings_dict.get("CONN_HEALTH_CHECKS"):
            return super().get_new_connection(conn_params)
        first = [super().get_new_connection(conn_params)]  # Django's checkout: opens the pool, the isolation level

        def getconn(timeout: float):
            if first:
                return first.pop()
            connection = pool.getconn(timeout)
            if "isolation_level" in self.settings_dict["OPTIONS"]:  # as Django's checkout sets it
                connection.isolation_level = self.isolation_level
            return connection

        return checked_checkout(pool, getconn)
