"""Filters of the log handlers (settings LOGGING; no Django inside)."""
from __future__ import annotations

import logging


class WithoutClientErrorTraceback(logging.Filter):
    """A refused request (4xx: a 403 from a role check, a 404) is logged as one line without its traceback; a 500 and
    every record without a status keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and 400 <= status < 500:
            record.exc_info, record.exc_text = None, None
        return True
