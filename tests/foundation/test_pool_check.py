"""The pool's check (foundation.pool_check) on real PostgreSQL connections: a healthy idle one passes without a
round trip (the server's record of the backend's last statement is unchanged), and every way a connection is
spoiled makes it take the round trip, which raises for a dead one; a pool with this check hands out only working
connections after all its backends were terminated. The settings give every pool this check."""
from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest
from django.db import connection
from psycopg_pool import ConnectionPool

from foundation.pool_check import check_idle_connection, checked_checkout
from tests.conftest import REPO_DIR, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)
MARK = "SELECT 4242 AS pool_check_mark"


def _conninfo() -> dict:
    params = connection.get_connection_params()
    return {k: v for k, v in params.items() if k not in {"cursor_factory", "context", "prepare_threshold"}}


def _last_statement(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


def _wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while _last_statement_or_none(pid) is not None:
        assert time.monotonic() < deadline, f"backend {pid} still there"
        time.sleep(0.02)


def _last_statement_or_none(pid: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.fixture
def idle_connection():
    conn = psycopg.connect(**_conninfo(), autocommit=True)
    conn.execute(MARK)
    yield conn
    conn.close()


def test_a_healthy_idle_connection_passes_without_a_round_trip(idle_connection):
    pid = idle_connection.info.backend_pid
    for _ in range(3):
        check_idle_connection(idle_connection)
    assert _last_statement(pid) == MARK
    # The probe sees a round trip: psycopg_pool's own check leaves its empty statement as the last one.
    ConnectionPool.check_connection(idle_connection)
    assert _last_statement(pid) == ""


def test_a_terminated_backend_fails_the_check(idle_connection):
    pid = idle_connection.info.backend_pid
    _terminate(pid)
    _wait_until_gone(pid)
    with pytest.raises(psycopg.OperationalError):
        check_idle_connection(idle_connection)


@pytest.mark.parametrize("spoil", ["closed by the client", "a pending notification"])
def test_a_spoiled_connection_takes_the_round_trip(idle_connection, spoil):
    pid = idle_connection.info.backend_pid
    if spoil == "closed by the client":
        idle_connection.close()
        with pytest.raises(psycopg.OperationalError):
            check_idle_connection(idle_connection)
        return
    idle_connection.execute("LISTEN pool_check_channel")
    idle_connection.execute(MARK)
    with connection.cursor() as cursor:
        cursor.execute("NOTIFY pool_check_channel")
    deadline = time.monotonic() + 5
    while True:  # the notification reaches the socket: news, so the check asks the server
        check_idle_connection(idle_connection)
        if _last_statement(pid) == "":
            break
        assert time.monotonic() < deadline, "the pending notification was not seen"
        time.sleep(0.02)


def test_a_pool_with_this_check_replaces_every_terminated_connection():
    pool = ConnectionPool(kwargs={**_conninfo(), "autocommit": True}, min_size=3, max_size=3, open=True,
                          check=check_idle_connection, timeout=10)
    try:
        pool.wait(timeout=10)
        with pool.connection() as a, pool.connection() as b, pool.connection() as c:
            pids = {conn.info.backend_pid for conn in (a, b, c)}
        assert len(pids) == 3
        for pid in pids:
            _terminate(pid)
        for pid in pids:
            _wait_until_gone(pid)
        with pool.connection() as a, pool.connection() as b, pool.connection() as c:
            for conn in (a, b, c):
                assert conn.execute("SELECT 1").fetchone() == (1,)
                assert conn.info.backend_pid not in pids
    finally:
        pool.close()


@pytest.mark.parametrize("size", [1, 4])
def test_when_every_pooled_connection_is_dead_the_next_is_tried_at_once(size):
    """After a restart every idle connection of a pool is dead. The checkout discards each and tries the next at
    once: a working connection in well under the 1 s that psycopg_pool's own checked checkout sleeps after the first
    dead one (then 2, 4, 8 s: 15 s for the fifth). The dead ones are replaced."""
    pool = ConnectionPool(kwargs={**_conninfo(), "autocommit": True}, min_size=size, max_size=size, open=True,
                          timeout=10)
    try:
        pool.wait(timeout=10)
        taken = [pool.getconn() for _ in range(size)]
        pids = {conn.info.backend_pid for conn in taken}
        for conn in taken:
            pool.putconn(conn)
        for pid in pids:
            _terminate(pid)
        for pid in pids:
            _wait_until_gone(pid)
        began = time.monotonic()
        conn = checked_checkout(pool, pool.getconn)
        took = time.monotonic() - began
        try:
            assert conn.execute("SELECT 1").fetchone() == (1,) and conn.info.backend_pid not in pids
        finally:
            pool.putconn(conn)
        assert took < 0.9, f"{took:.2f} s for a working connection"
        assert pool.get_stats().get("returns_bad", 0) == size  # every dead one was discarded, none kept
    finally:
        pool.close()


def test_a_checkout_gives_up_at_the_pools_timeout_when_every_new_connection_dies_too():
    """The server keeps failing (here: every connection is terminated as soon as it is handed out): past the pool's
    size of dead connections in a row the checkout waits between tries and raises PoolTimeout at the timeout."""
    from psycopg_pool import PoolTimeout

    pool = ConnectionPool(kwargs={**_conninfo(), "autocommit": True}, min_size=1, max_size=1, open=True, timeout=2)
    tries = []

    def dying_getconn(timeout):
        conn = pool.getconn(timeout)
        pid = conn.info.backend_pid
        _terminate(pid)
        _wait_until_gone(pid)
        tries.append(pid)
        return conn

    try:
        pool.wait(timeout=10)
        began = time.monotonic()
        with pytest.raises(PoolTimeout):
            checked_checkout(pool, dying_getconn)
        assert 1.5 < time.monotonic() - began < 4 and 3 <= len(tries) <= 20
    finally:
        pool.close()


def test_the_wait_for_a_free_connection_counts_in_the_pools_timeout():
    """Every connection busy: PoolTimeout at the pool's timeout, whatever was tried before (one budget in all)."""
    from psycopg_pool import PoolTimeout

    pool = ConnectionPool(kwargs={**_conninfo(), "autocommit": True}, min_size=1, max_size=1, open=True, timeout=1)
    try:
        pool.wait(timeout=10)
        held = pool.getconn()
        began = time.monotonic()
        with pytest.raises(PoolTimeout):
            checked_checkout(pool, pool.getconn)
        assert 0.8 < time.monotonic() - began < 1.8
        pool.putconn(held)
    finally:
        pool.close()


def test_djangos_pool_checks_out_a_connection_without_a_round_trip():
    """Through the settings and Django's own connection, as gunicorn's workers run: the pool's check is this one,
    and checking a pooled connection out leaves the server's record of its last statement as it was."""
    code = f"""if True:
        import django; django.setup()
        from django.db import connections
        connection = connections["default"]
        with connection.cursor() as cursor:
            cursor.execute("{MARK}")
            pid = connection.connection.info.backend_pid
        connection.close()  # back to the pool
        connection.ensure_connection()  # out again, through the check
        same = connection.connection.info.backend_pid == pid
        print(type(connection).__module__, connection.pool._check is None, same, pid)
        connection.close()
        input()  # the test reads the backend's last statement meanwhile
    """
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_DIR, env=subprocess_env(DATABASE_POOL="1", DATABASE_POOL_MAX="1"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().split()
        assert len(line) == 4, proc.stderr.read()[-2000:] if proc.poll() is not None else line
        module, check, same, pid = line
        # The pool checks nothing by itself: the backend's checkout does (checked_checkout), with this check.
        assert (module, check, same) == ("tests.support.pg_backend.base", "True", "True")
        assert _last_statement(int(pid)) == MARK
    finally:
        proc.communicate("\n", timeout=30)
