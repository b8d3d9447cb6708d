"""The embedded mode's limiter (no Redis): an endpoint's N request slots as N files locked with ``flock``, shared by
the worker processes of one machine; the kernel releases a dead process's locks at once. Requests-per-minute is
enforced per process in this mode. The shared machinery is ``evaluation.model_calls.limiter``'s ``Limiter``."""
from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import fcntl
import logging
import os
import random
import time
from pathlib import Path

from evaluation.model_calls.limiter import Limiter

log = logging.getLogger(__name__)

_IN_MODIFY = 0x00000002  # inotify(7)


class FileLimiter(Limiter):
    """The coroutines of a process that wait for a slot are served together by one task: one pass over the slot
    files this process does not hold gives each waiter a free one (a pass per waiter, each opening every file, was
    two fifths of a 12k-request run's CPU). The files stay open; a slot given back wakes the task at once.

    Slots another process gives back are found by the next pass: at once when that process leaves a mark (it does
    when it gives back more than its own coroutines wait for, e.g. its chunk is ending), which the kernel reports to
    the waiting processes (inotify, read by the event loop: nothing is polled for it); else after the pass's backoff
    (``poll_first_s``, growing to ``poll_max_s``: a process killed leaves no mark). Without the mark, the slots of a
    chunk ending in one process stayed idle for up to 50 ms while the other's requests waited for them."""

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
        self._mark_fd: int | None = None  # the mark file, opened at its first use (again after close())
        self._watch: _MarkWatch | bool | None = None  # False: inotify could not be had (then the backoff alone)

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

    def _mark(self) -> int:
        if self._mark_fd is None:
            self._mark_fd = os.open(self.directory / "freed.mark", os.O_RDWR | os.O_CREAT, 0o644)
        return self._mark_fd

    def _mark_freed(self) -> None:
        """Tell the waiting processes that slots were given back: a new value in the mark file (this process's id
        and its clock, never written twice). Should it fail, the others find the slots at their next poll."""
        try:
            os.pwrite(self._mark(), os.getpid().to_bytes(8, "little") + time.monotonic_ns().to_bytes(8, "little"), 0)
        except OSError as exc:
            log.warning("could not mark slots given back in %s: %s", self.directory, exc)

    async def _wait_for_slots(self, backoff_s: float) -> None:
        """Until a slot of this process is given back, another process marks slots given back (the kernel says so:
        inotify), or ``backoff_s``."""
        if self._watch is None:
            self._watch = _MarkWatch.start(self.directory / "freed.mark", self._freed)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._freed.wait(), backoff_s)

    async def _release(self, token: str) -> None:
        await self._release_many([token])

    async def _release_many(self, tokens: list[str]) -> None:
        for token in tokens:
            self._unlock(int(token))
        if self._freed is not None:
            self._freed.set()
        if tokens and self._waiting(up_to=len(tokens)) < len(tokens):  # more than this process waits for: marked
            self._mark_freed()

    def _waiting(self, *, up_to: int) -> int:
        """How many coroutines of this process wait for a slot, counted up to ``up_to``."""
        count = 0
        for future in self._waiters:
            if not future.done():
                count += 1
                if count >= up_to:
                    break
        return count

    async def close(self) -> None:
        """Give back every slot (marked for the other processes, whoever waited here) and close the files; a use
        after this opens them again."""
        await super().close()
        for slot in list(self._held):
            self._unlock(slot)
        if isinstance(self._watch, _MarkWatch):
            self._watch.close()
        self._watch = None
        if self._mark_fd is not None:  # used: slots may have been given back (the spare ones, kept for reuse)
            self._mark_freed()
            os.close(self._mark_fd)
            self._mark_fd = None
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


class _MarkWatch:
    """An inotify watch of the mark file, read by the event loop: each write to it (another process's slots given
    back) sets the limiter's event. Linux only; elsewhere, or without a free inotify instance, the waiting process
    finds the slots at its next poll."""

    _libc = None

    def __init__(self, fd: int, event: asyncio.Event):
        self.fd, self.event, self.loop = fd, event, asyncio.get_running_loop()
        self.loop.add_reader(fd, self._read)

    @classmethod
    def start(cls, path: Path, event: asyncio.Event) -> _MarkWatch | bool:
        try:
            if cls._libc is None:
                cls._libc = ctypes.CDLL(None, use_errno=True)
            fd = cls._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):  # no inotify here (not Linux)
            return False
        if fd < 0:
            log.warning("no inotify for the limiter (%s): other processes' slots are found by polling",
                        os.strerror(ctypes.get_errno()))
            return False
        try:
            path.touch(exist_ok=True)
        except OSError:
            os.close(fd)
            return False
        if cls._libc.inotify_add_watch(fd, os.fsencode(path), _IN_MODIFY) < 0:
            os.close(fd)
            return False
        return cls(fd, event)

    def _read(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.fd, 4096):
                pass
        self.event.set()

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.remove_reader(self.fd)
        os.close(self.fd)
