"""A dropped database connection never reaches a person as a 500.

After a database restart, a failover or terminated backends (``pg_terminate_backend``), connections that were
open are dead. Django's pool checks each connection before a request gets it (settings: ``"check"`` in the pool's
options; ``CONN_HEALTH_CHECKS`` without a pool), so most requests never see one. A connection can still die
between that check and its use; then:

- an idempotent request (GET, HEAD) is run once more, on a fresh connection (`DatabaseFaultMiddleware`);
- any other request, or one whose second try fails too, is answered 503 "please try again" with the site's
  layout (an API request: JSON), never 500 (`transient_fault_response`, called by the 500 handler).

The failed transaction was rolled back by the server, so running a GET again changes nothing that the first try
had not already committed. Participant pages have their own retry and page (``studies.views.participant_pages``),
which uses the same helpers.
"""
from __future__ import annotations

import logging
import sys

from django.core.signals import got_request_exception
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext

logger = logging.getLogger("foundation.database_faults")

#: A dropped or broken database connection (a restart, a failover, terminated backends, a deadlock victim):
#: the transaction was rolled back, so the request can run again on a new connection.
TRANSIENT_DATABASE_ERRORS = (OperationalError, InterfaceError)
#: Methods that may run twice (RFC 9110 "safe"; OPTIONS answers without the database).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD"})
RETRY_AFTER_S = 2
PLAIN_503 = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Please try again</title></head>"
             "<body><h1>Please try again</h1><p>The server was briefly unable to reach its database. Please try "
             "again in a moment.</p><p><a href=\"/\">Home</a></p></body></html>")


def is_transient(exc: BaseException | None) -> bool:
    return isinstance(exc, TRANSIENT_DATABASE_ERRORS)


def pool_exhausted(fault: BaseException) -> bool:
    """No free connection in the pool within its timeout: the server is overloaded, and waiting as long again
    would not help (the "please try again" page comes at once)."""
    cause = fault.__cause__
    return cause is not None and type(cause).__name__ == "PoolTimeout"


def reconnect() -> bool:
    """After a transient fault: drop this thread's connections (a pooled one goes back to be discarded) and the
    pooled ones the same fault broke, so that a second try gets a working connection. False when the request
    cannot be run again here (an outer transaction: ATOMIC_REQUESTS, a test)."""
    if any(conn.in_atomic_block for conn in connections.all(initialized_only=True)):
        return False
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
        except DatabaseError:  # closing a connection the server already dropped
            conn.connection = None
        pool = getattr(conn, "pool", None) if conn.settings_dict.get("OPTIONS", {}).get("pool") else None
        if pool is not None:
            try:
                pool.check()  # tests each idle connection; replaces the dead ones
            except Exception:  # noqa: BLE001 - the retry finds out for itself
                logger.warning("the connection pool could not be checked", exc_info=True)
    return True


def _first_line(fault: BaseException) -> str:
    text = str(fault).strip()
    return text.splitlines()[0] if text else type(fault).__name__


def _mark_request(sender, request=None, **kwargs) -> None:
    """got_request_exception: a request that a dropped connection ended is marked for DatabaseFaultMiddleware
    (in every mode: with DEBUG on Django answers with its debug page instead of the 500 handler)."""
    fault = sys.exc_info()[1]
    if request is not None and is_transient(fault):
        request.database_fault = fault


got_request_exception.connect(_mark_request, dispatch_uid="foundation.database_faults")


def transient_fault_response(request) -> HttpResponse | None:
    """Called while the exception that ended a request is being handled (the 500 handler): for a dropped
    database connection, the 503 answer (and the request is marked for `DatabaseFaultMiddleware` to run an
    idempotent one again); for anything else None."""
    fault = sys.exc_info()[1]
    if not is_transient(fault):
        return None
    request.database_fault = fault
    logger.warning("database connection lost (%s): %s %s", _first_line(fault), request.method, request.path)
    response = unavailable_response(request)
    response._has_been_logged = True  # this warning, not Django's "Internal Server Error" with a traceback
    return response


def unavailable_response(request) -> HttpResponse:
    """503 "please try again": the site's layout without any query (the database is what failed), or JSON."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": gettext("The database was briefly unavailable and the request was not "
                                                   "finished; please try again."), "code": "database_unavailable"},
                                status=503)
    else:
        try:
            html = render_to_string("503.html", {"retry_url": request.get_full_path()
                                                 if request.method in IDEMPOTENT_METHODS else ""})
        except Exception:  # the error page must never fail itself
            logger.exception("the 503 page could not be rendered; sent the plain one")
            html = PLAIN_503
        response = HttpResponse(html, status=503)
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseFaultMiddleware:
    """Runs an idempotent request once more, on fresh connections, when a dropped database connection ended it.

    Django's got_request_exception marks the request (and the 500 handler, `transient_fault_response`, answers
    503); here, a GET or HEAD so marked goes through the middleware and the view once more. Placed before every
    middleware that reads the database (sessions, authentication), so that those run again too.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        fault = getattr(request, "database_fault", None)
        if fault is None or request.method not in IDEMPOTENT_METHODS:
            return response
        if getattr(request, "database_fault_retried", False):
            return response
        if pool_exhausted(fault) or not reconnect():
            return response
        logger.warning("database connection lost (%s), retrying once on a new connection: %s %s",
                       _first_line(fault), request.method, request.path)
        request.database_fault, request.database_fault_retried = None, True
        for cached in ("_cached_user", "_messages"):  # read through the dead connection: read them again
            if cached in request.__dict__:
                delattr(request, cached)
        retried = self.get_response(request)
        if getattr(request, "database_fault", None) is not None:
            reconnect()  # the next request of this thread starts from fresh connections too
        return retried


__all__ = ["DatabaseFaultMiddleware", "IDEMPOTENT_METHODS", "TRANSIENT_DATABASE_ERRORS", "is_transient",
           "pool_exhausted", "reconnect", "transient_fault_response", "unavailable_response"]
