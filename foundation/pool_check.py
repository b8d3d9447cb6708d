"""The database pool's check of a connection before a request gets it, without a round trip when nothing is wrong.

psycopg_pool's own check (``ConnectionPool.check_connection``) sends an empty query and waits for the answer at every
checkout: two per participant's Start, each a wake-up of a PostgreSQL backend, and a wait in the queue of a server
that is busy serving a whole class. A pooled connection is idle: in autocommit, no transaction, nothing sent and
nothing owed. So anything the server sent it since is news, and what kills a connection sends something: a
terminated backend (``pg_terminate_backend``), a restart, a failover or a crash leave the server's FATAL message
and the closed socket (EOF) to read. This check looks at the socket without waiting (one ``poll`` of timeout 0)
and makes the full round trip only when there is something to read or libpq already knows the
connection is bad; then the round trip raises for a dead one and the pool replaces it.

What it cannot see is a peer that vanished without a word (a cable cut: no FIN); the round trip would only have
waited for a timeout there too. A connection that dies between this check and its use is the rest of
``foundation.database_faults``' job, as before.
"""
from __future__ import annotations

import select
import time
from collections.abc import Callable

from psycopg import Connection
from psycopg.pq import ConnStatus, TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout


def check_idle_connection(conn: Connection) -> None:
    """The pool's ``check``: returns quietly for a healthy idle connection, raises (psycopg.Error) for a broken one."""
    pgconn = conn.pgconn
    if (conn.closed or pgconn.status != ConnStatus.OK or pgconn.transaction_status != TransactionStatus.IDLE
            or _has_news(pgconn.socket)):
        ConnectionPool.check_connection(conn)  # the full round trip: raises if the connection is dead


def checked_checkout(pool: ConnectionPool, getconn: Callable[[float], Connection]) -> Connection:
    """A connection of `pool` (taken by `getconn(timeout)`, unchecked) that passes `check_idle_connection`.

    A dead one goes back (the pool discards it and opens another in the background) and the next is tried at once.
    psycopg_pool's own checked checkout waits between two dead connections, 1 s, then 2, 4, 8 s: after a restart
    or a failover, when every idle connection of the pool is dead, a request waited 15 s for the fifth of them,
    and with backends terminated every half second requests ran out of the pool's 20 s. Only after more dead
    connections in a row than the pool holds (the new ones die too: the server is failing) does this wait between
    tries, 0.1 s doubling to 1 s. All of it within the pool's timeout, waits for a free connection included:
    PoolTimeout after it.
    """
    deadline = time.monotonic() + pool.timeout
    dead, delay = 0, 0.0
    while True:
        conn = getconn(max(0.0, deadline - time.monotonic()))
        try:
            check_idle_connection(conn)
            return conn
        except BaseException as error:  # the connection goes back: the pool replaces a dead one
            pool.putconn(conn)
            if not isinstance(error, Exception):  # interrupted: the interruption goes on
                raise
        dead += 1
        if dead > pool.max_size:
            delay = min(1.0, max(0.1, delay * 2))
            if time.monotonic() + delay >= deadline:
                raise PoolTimeout(f"no working connection after {pool.timeout:g} s ({dead} dead in a row)")
            time.sleep(delay)


def _has_news(fd: int) -> bool:
    """Whether the server sent anything (a message, EOF, an error) to this idle connection's socket."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


__all__ = ["check_idle_connection", "checked_checkout"]
