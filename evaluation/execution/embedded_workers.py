"""Whether a worker runs beside this process on the embedded broker (make run's filesystem queue), which answers
no ping: each worker's main process leaves a file named by its pid while it runs (a killed one's pid is dead)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from django.conf import settings


def embedded() -> bool:
    return str(settings.CELERY_BROKER_URL).startswith("filesystem:")


def _marks() -> Path:
    return Path(settings.VAR_DIR) / "celery-broker" / "workers"


def mark_running() -> None:
    """Called by a worker when it is ready (evaluation.tasks); nothing on other brokers."""
    if embedded():
        _marks().mkdir(parents=True, exist_ok=True)
        (_marks() / str(os.getpid())).touch()


def unmark() -> None:
    if embedded():
        with contextlib.suppress(FileNotFoundError):
            (_marks() / str(os.getpid())).unlink()


def running() -> bool:
    """A worker's main process is alive on this machine's embedded broker."""
    if not embedded() or not _marks().is_dir():
        return False
    for mark in _marks().iterdir():
        try:
            os.kill(int(mark.name), 0)
        except (ValueError, ProcessLookupError):
            continue
        except PermissionError:  # alive, another user's
            return True
        return True
    return False
