"""Project-level pages: the home page (a dashboard per role), a health check, and the
403 / 404 / 500 pages (the site's layout, a reason and a way back; never a traceback)."""
import logging

from django.contrib.auth.decorators import login_required
from django.core.exceptions import DisallowedHost
from django.db import connection
from django.http import HttpResponse, HttpResponsePermanentRedirect, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache

from detectbench_web.dashboard import home_dashboard
from foundation.database_faults import transient_fault_response

logger = logging.getLogger(__name__)

# The last resort when even the 500 template cannot render (a missing static manifest, a broken template).
PLAIN_500 = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Server error</title></head>"
             "<body><h1>Server error</h1><p>Something went wrong on our side. Please try again in a moment.</p>"
             "<p><a href=\"/\">Home</a></p></body></html>")


@login_required
@never_cache  # the user's own queue and counts: Back fetches them again (as every page behind a role, foundation.roles)
def home(request):
    """The dashboard: per role, what is waiting and where to go (links come from the navigation context)."""
    return render(request, "home.html", {"board": home_dashboard(user=request.user)})


def favicon(request):
    """/favicon.ico, which browsers ask for on every site: the icon in the static files (not a 404)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def _back_url(request) -> str | None:
    """The page the visitor came from, when it is on this site; else None."""
    referer = request.META.get("HTTP_REFERER", "")
    try:
        host = request.get_host()
    except DisallowedHost:
        return None
    if referer and url_has_allowed_host_and_scheme(referer, allowed_hosts={host}, require_https=request.is_secure()):
        return referer
    return None


def permission_denied(request, exception=None) -> HttpResponse:
    """handler403: the reason the view gave (role checks say which role the page is for)."""
    reason = str(exception) if exception is not None and str(exception) else ""
    context = {"reason": reason, "back_url": _back_url(request)}
    return render(request, "403.html", context, status=403)


def page_not_found(request, exception=None) -> HttpResponse:
    """handler404: which address has no page (not the resolver's patterns or a model name)."""
    context = {"request_path": request.path, "back_url": _back_url(request)}
    return render(request, "404.html", context, status=404)


def server_error(request) -> HttpResponse:
    """handler500: rendered without context processors or any database query (the database may be down).

    A dropped database connection is not a server error: 503 "please try again" (and a GET is run once more on a
    fresh connection by foundation.database_faults.DatabaseFaultMiddleware)."""
    unavailable = transient_fault_response(request)
    if unavailable is not None:
        return unavailable
    try:
        html = render_to_string("500.html", {"back_url": _back_url(request)})
    except Exception:  # the error page must never fail itself
        logger.exception("the 500 page could not be rendered; sent the plain one")
        html = PLAIN_500
    return HttpResponseServerError(html)
