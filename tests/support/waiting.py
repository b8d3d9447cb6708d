"""Waiting for something another process does (a Celery worker, a server): poll until it holds, or fail naming it."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout_s: float, what: str) -> T:
    """The first truthy value of `condition()`, polled every 0.1 s; AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout_s} s for {what}")
