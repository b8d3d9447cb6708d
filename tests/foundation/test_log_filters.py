"""foundation.log_filters: through the settings' own LOGGING, a refused request is one line, a 500 keeps its traceback."""
from __future__ import annotations

import copy
import io
import logging
import logging.config

from django.conf import settings


def _log(status: int) -> str:
    config = copy.deepcopy(settings.LOGGING)
    config["handlers"]["console"]["stream"] = stream = io.StringIO()
    config["root"] = {"handlers": [], "level": "WARNING"}
    config["loggers"] = {"filters.under.test": {"handlers": ["console"], "level": "WARNING", "propagate": False}}
    config["disable_existing_loggers"] = False
    logging.config.dictConfig(config)
    try:
        try:
            raise PermissionDenied("no role")
        except PermissionDenied:
            logging.getLogger("filters.under.test").error("Forbidden: /x", exc_info=True,
                                                          extra={"status_code": status})
    finally:
        logging.config.dictConfig(settings.LOGGING)
    return stream.getvalue()


class PermissionDenied(Exception):
    pass


def test_a_refused_request_is_one_line_and_a_server_error_keeps_its_traceback():
    for status in (403, 404, 400, 499):
        text = _log(status)
        assert "Forbidden: /x" in text and "Traceback" not in text and text.count("\n") == 1, (status, text)
    for status in (500, 503):
        text = _log(status)
        assert "Forbidden: /x" in text and "Traceback" in text and "no role" in text, (status, text)
