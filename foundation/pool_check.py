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

from psycopg import Connection
from psycopg.pq import ConnStatus, TransactionStatus
from psycopg_pool import ConnectionPool


def check_idle_connection(conn: Connection) -> None:
    """The pool's ``check``: returns quietly for a healthy idle connection, raises (psycopg.Error) for a broken one."""
    pgconn = conn.pgconn
    if (conn.closed or pgconn.status != ConnStatus.OK or pgconn.transaction_status != TransactionStatus.IDLE
            or _has_news(pgconn.socket)):
        ConnectionPool.check_connection(conn)  # the full round trip: raises if the connection is dead


def _has_news(fd: int) -> bool:
    """Whether the server sent anything (a message, EOF, an error) to this idle connection's socket."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


__all__ = ["check_idle_connection"]
