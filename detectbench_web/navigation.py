"""Navigation: the links each role sees in the top bar and on the home page.

Apps declare their links on their AppConfig (`home_links = {role: [(label, url name), ...]}`);
this module collects them for the user's roles.
"""
from __future__ import annotations

from django.apps import apps
from django.urls import NoReverseMatch, reverse

from foundation.roles import ANNOTATORS, RESEARCHERS, is_annotator, is_researcher


def app_links(role: str) -> list[dict]:
    """The links every installed app offers to `role`, in app order."""
    links = []
    for config in apps.get_app_configs():
        for label, url_name in getattr(config, "home_links", {}).get(role, []):
            try:
                links.append({"label": label, "url": reverse(url_name)})
            except NoReverseMatch:
                continue
    return links


def navigation_context(request) -> dict:
    """Template context: the user's roles and the navigation links those roles may use."""
    user = getattr(request, "user", None)
    annotator = is_annotator(user) if user else False
    researcher = is_researcher(user) if user else False
    return {
        "is_annotator": annotator,
        "is_researcher": researcher,
        "annotator_links": app_links(ANNOTATORS) if annotator else [],
        "researcher_links": app_links(RESEARCHERS) if researcher else [],
    }
