"""Project-level pages: the home page that routes each role to its area, and a health check."""
from django.apps import apps
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from .roles import ANNOTATORS, RESEARCHERS, is_annotator, is_researcher


def _links(role: str) -> list[dict]:
    """Links that apps offer on the home page: AppConfig.home_links = {role: [(label, url name)]}."""
    links = []
    for config in apps.get_app_configs():
        for label, url_name in getattr(config, "home_links", {}).get(role, []):
            try:
                links.append({"label": label, "url": reverse(url_name)})
            except NoReverseMatch:
                continue
    return links


@login_required
def home(request):
    context = {
        "annotator_links": _links(ANNOTATORS) if is_annotator(request.user) else [],
        "researcher_links": _links(RESEARCHERS) if is_researcher(request.user) else [],
    }
    return render(request, "home.html", context)


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
