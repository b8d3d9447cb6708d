"""The embedded mode's limiter (no Redis): an endpoint's N request slots as N files locked with ``flock``, shared by
the worker processes of one machine; the kernel releases a dead process's locks at once. Requests-per-minute is
enforced per process in this mode. The shared machinery is ``evaluation.model_calls.limiter``'s ``Limiter``."""
from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import os
import random
import time
from pathlib import Path

from evaluation.model_calls.limiter import Limiter


class FileLimiter(Limiter):
    """The coroutines of a process that wait for a slot are served together by one task: one pass over the slot
    files this process does not hold gives each waiter a free one (a pass per waiter, each opening every file, was
    two fifths of a 12k-request run's CPU). The files stay open; a slot given back wakes the task at once.

    Slots another process gives back are found by the next pass: at once when that process leaves a mark (it does
    when none of its own coroutines waits for them, e.g. its chunk is ending), which a waiting process reads every
    ``look_s``; else after the pass's backoff (``poll_first_s``, growing to ``poll_max_s``: a process killed leaves no
    mark).
    Without the mark, the slots of a chunk ending in one process stayed idle for up to 50 ms while the other's
    requests waited for them."""

    look_s = 0.004
    poll_first_s = 0.002
    poll_max_s = 0.05

    def __init__(self, *, directory: Path, limit: int, requests_per_minute: int | None = None):
        super().__init__(limit=limit, requests_per_minute=requests_per_minute)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._starts: collections.deque[float] = collections.deque()
        self._fds: dict[int, int] = {}  # slot -> its file, opened once
        self._held: set[int] = set()  # slots this process holds
        self._next = random.randrange(self.limit)  # where the next pass starts (processes start apart)
        self._freed: asyncio.Event | None = None
        self._mark_fd = os.open(self.directory / "freed.mark", os.O_RDWR | os.O_CREAT, 0o644)
        self._mark_seen = b""

    def _lock_free(self, wanted: int) -> list[int]:
        """Up to ``wanted`` slots locked now, in one pass over the slots this process does not hold."""
        got: list[int] = []
        for step in range(self.limit):
            if len(got) >= wanted or len(self._held) >= self.limit:
                break
            slot = (self._next + step) % self.limit
            if slot in self._held:
                continue
            if (fd := self._fds.get(slot)) is None:
                fd = self._fds[slot] = os.open(self.directory / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            self._held.add(slot)
            got.append(slot)
            self._next = (slot + 1) % self.limit
        return got

    def _try_lock(self) -> int | None:
        """One free slot locked now, or None."""
        got = self._lock_free(1)
        return got[0] if got else None

    async def _acquire(self) -> str:
        return await self._granted()

    async def _acquire_for_waiters(self) -> None:
        waited = 0
        self._freed = self._freed or asyncio.Event()
        await asyncio.sleep(0)  # let the coroutines of this loop turn queue up too
        while wanted := sum(1 for f in self._waiters if not f.done()):
            if self.rpm:
                now = time.monotonic()
                while self._starts and self._starts[0] < now - 60:
                    self._starts.popleft()
                if len(self._starts) >= self.rpm:
                    await asyncio.sleep(max(0.05, self._starts[0] + 60 - now))
                    continue
                wanted = min(wanted, self.rpm - len(self._starts))
            self._freed.clear()
            self._mark_seen = os.pread(self._mark_fd, 16, 0)  # read before the pass: a mark after it is seen
            for slot in self._lock_free(wanted):
                waiter = self._next_waiter()
                if waiter is None:
                    self._unlock(slot)
                    continue
                if self.rpm:
                    self._starts.append(time.monotonic())
                waiter.set_result(str(slot))
            if any(not f.done() for f in self._waiters):  # the others' slots: wait for one given back, or poll
                await self._wait_for_slots(min(self.poll_max_s, self.poll_first_s * (1.5 ** min(waited, 10))))
                waited += 1
            else:
                waited = 0

    def _unlock(self, slot: int) -> None:
        if slot in self._held:
            fcntl.flock(self._fds[slot], fcntl.LOCK_UN)
            self._held.discard(slot)

    async def _wait_for_slots(self, backoff_s: float) -> None:
        """Until a slot of this process is given back, another process marks slots given back, or ``backoff_s``."""
        deadline = time.monotonic() + backoff_s
        while (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._freed.wait(), min(left, self.look_s))
                return
            if os.pread(self._mark_fd, 16, 0) != self._mark_seen:
                return

    def _mark_freed(self) -> None:
        """Tell the waiting processes that slots were given back: a new value in the mark file (this process's id
        and its clock, never written twice)."""
        os.pwrite(self._mark_fd, os.getpid().to_bytes(8, "little") + time.monotonic_ns().to_bytes(8, "little"), 0)

    async def _release(self, token: str) -> None:
        await self._release_many([token])

    async def _release_many(self, tokens: list[str]) -> None:
        for token in tokens:
            self._unlock(int(token))
        if self._freed is not None:
            self._freed.set()
        if tokens and not any(not f.done() for f in self._waiters):  # none of this process's: the others'
            self._mark_freed()

    async def close(self) -> None:
        await super().close()
        held = list(self._held)
        for slot in held:
            self._unlock(slot)
        if held:
            self._mark_freed()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        if self._mark_fd >= 0:
            os.close(self._mark_fd)
            self._mark_fd = -1
