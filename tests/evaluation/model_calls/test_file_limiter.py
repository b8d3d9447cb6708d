"""The embedded mode's file limiter, against real files and real processes: two limiters (two processes: flock locks
belong to each open file) share the slots, a killed process gives its slots back at once, the per-minute cap, a waiter
given up leaks no slot, and slots freed by a process for nobody of its own reach the other process at once."""
import asyncio
import signal
import subprocess
import sys
import time

import pytest

from evaluation.model_calls.file_limiter import FileLimiter
from tests.evaluation.model_calls.test_limiter import _hold


def test_file_limiter_for_the_embedded_mode(tmp_path):
    async def go():
        a = FileLimiter(directory=tmp_path, limit=2)
        b = FileLimiter(directory=tmp_path, limit=2)
        gauge = {"now": 0, "peak": 0}
        await asyncio.gather(*(_hold(a if i % 2 else b, gauge, 0.02) for i in range(12)))
        await a.close(), await b.close()  # gives back the slots kept for reuse
        return gauge["peak"]

    assert asyncio.run(go()) == 2
    # A process killed while holding every slot gives them back at once (the kernel drops flock locks).
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fds = [os.open('{tmp_path}/slot-%d.lock' % i, os.O_RDWR | os.O_CREAT) for i in range(2)]\n"
        "[fcntl.flock(fd, fcntl.LOCK_EX) for fd in fds]\nprint('held', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
    except BaseException:
        holder.kill()
        raise
    assert FileLimiter(directory=tmp_path, limit=2)._try_lock() is None
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert FileLimiter(directory=tmp_path, limit=2)._try_lock() is not None


def test_file_limiter_requests_per_minute_and_a_waiter_given_up_leaks_no_slot(tmp_path):
    """The embedded limiter's per-minute cap, and a coroutine cancelled while it waits for a slot: the slot it may
    have been granted as it gave up goes back, so the other process gets all of them afterwards."""
    async def go():
        capped = FileLimiter(directory=tmp_path / "rpm", limit=10, requests_per_minute=5)
        for _ in range(5):
            async with capped.slot():
                pass
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(capped._acquire(), 0.5)
        await capped.close()

        a = FileLimiter(directory=tmp_path / "slots", limit=2)
        b = FileLimiter(directory=tmp_path / "slots", limit=2)
        held = [await a._acquire(), await a._acquire()]  # a holds both
        waiting = [asyncio.ensure_future(b._acquire()) for _ in range(3)]
        await asyncio.sleep(0.05)
        assert not any(w.done() for w in waiting)
        waiting[0].cancel()
        for token in held:
            await a._release(token)
        granted = await asyncio.wait_for(asyncio.gather(*waiting[1:]), 2.0)
        assert sorted(granted) == ["0", "1"]  # the two left waiting got the two slots
        assert waiting[0].cancelled()
        for token in granted:
            await b._release(token)
        assert sorted([await a._acquire(), await a._acquire()]) == ["0", "1"]  # nothing held by b any more
        await a.close(), await b.close()

    asyncio.run(go())


def _mark(directory) -> bytes:
    path = directory / "freed.mark"
    return path.read_bytes() if path.exists() else b""


def test_slots_another_process_frees_for_nobody_of_its_own_reach_the_waiting_process_at_once(tmp_path):
    """Embedded mode: when a process gives back more slots than its own coroutines wait for (its chunk is ending),
    it leaves a mark that wakes the other process's waiters at once (inotify), instead of their finding the slots
    at their next poll (here set to 5 s: without the mark they would wait that long). Slots given back while the
    same process has as many waiters go to them and leave no mark; of two given back with one waiter, the second is
    marked; closing a limiter marks what it gave back; a limiter closed and used again works."""
    async def go():
        a = FileLimiter(directory=tmp_path, limit=3)
        b = FileLimiter(directory=tmp_path, limit=3)
        # Neither polls within the test (only a slot given back in its own process, or a mark, wakes it): with a's
        # quick first polls, a slot b gave back for its own waiter could go to a's poll first on a loaded machine.
        a.poll_first_s = a.poll_max_s = b.poll_first_s = b.poll_max_s = 5.0
        held = [await a._acquire() for _ in range(3)]  # a holds all three
        mark = _mark(tmp_path)
        own = asyncio.ensure_future(a._acquire())  # a coroutine of a's own waits too
        await asyncio.sleep(0.01)
        await a._release(held.pop())
        held.append(await asyncio.wait_for(own, 1.0))  # a's own waiter took it ...
        assert _mark(tmp_path) == mark  # ... and nothing was marked for the others
        waiting = asyncio.ensure_future(b._acquire())
        await asyncio.sleep(0.05)  # b's first pass found nothing: it waits for a mark or its 5 s poll
        assert not waiting.done()
        released = time.monotonic()
        await a._release(held.pop())  # nobody of a's waits: marked
        token = await asyncio.wait_for(waiting, 1.0)
        assert time.monotonic() - released < 1.0 and token in ("0", "1", "2")
        # Two given back with one waiter of a's own: one goes to it, the other is marked for b.
        own = asyncio.ensure_future(a._acquire())
        second = asyncio.ensure_future(b._acquire())
        await asyncio.sleep(0.05)
        assert not own.done() and not second.done()
        await b._release(token)  # b gives its slot back while its own `second` waits: it takes it, no mark
        assert await asyncio.wait_for(second, 1.0) == token
        mark = _mark(tmp_path)
        await a._release_many(held)  # two back, one waiter of a's own: marked
        assert _mark(tmp_path) != mark
        await asyncio.wait_for(own, 1.0)
        # Closing gives back and marks; the limiter works again after it (its files opened again).
        mark = _mark(tmp_path)
        await a.close()
        assert _mark(tmp_path) != mark
        assert await asyncio.wait_for(a._acquire(), 1.0) in ("0", "1", "2")
        await a.close(), await b.close()

    asyncio.run(go())


def test_a_mark_that_cannot_be_written_leaves_the_slots_to_the_poll(tmp_path, caplog):
    """The mark is a help, not a need: where it cannot be written (here its name is taken by a directory) a release
    logs a warning and goes on, and the other process finds the slots at its next poll."""
    (tmp_path / "freed.mark").mkdir()

    async def go():
        a = FileLimiter(directory=tmp_path, limit=1)
        b = FileLimiter(directory=tmp_path, limit=1)
        held = await a._acquire()
        waiting = asyncio.ensure_future(b._acquire())
        await asyncio.sleep(0.05)
        await a._release(held)
        assert await asyncio.wait_for(waiting, 1.0) == "0"
        await a.close(), await b.close()

    asyncio.run(go())
    assert "could not mark slots given back" in caplog.text
