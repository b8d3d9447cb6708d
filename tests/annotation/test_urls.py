"""Every annotation page and API endpoint (annotation.urls, annotation.api_urls) refuses anonymous and
role-less users; annotators cannot reach researcher pages."""
from __future__ import annotations

import pytest
from django.urls import URLPattern, get_resolver, reverse

from annotation.models import Adjudication, Item

pytestmark = pytest.mark.django_db

RESEARCHER_ONLY = {"item_import", "progress", "agreement", "agreement_export", "belief_trust_index", "belief_trust",
                   "belief_trust_export"}
#: Pages about one belief lease or draft: the fake id of the walk below does not exist (404), but is not refused.
BELIEF_LEASE_PAGES = {"belief_review", "belief_release", "belief_draft"}


def _urls(namespace: str, item: Item, adjudication: Adjudication) -> list[tuple[str, str]]:
    values = {"pk": item.pk, "stage": "verification", "fmt": "csv", "name": "judge-a"}
    resolver = get_resolver()
    patterns = resolver.namespace_dict[namespace][1].url_patterns
    out = []
    for pattern in patterns:
        assert isinstance(pattern, URLPattern)
        kwargs = {k: values[k] for k in pattern.pattern.regex.groupindex}
        if pattern.name == "adjudication":
            kwargs["pk"] = adjudication.pk
        out.append((pattern.name, reverse(f"{namespace}:{pattern.name}", kwargs=kwargs)))
    return out


def test_every_page_and_endpoint_refuses_anonymous_and_role_less_users(client, plain_user, world):
    urls = _urls("annotation", *world) + _urls("annotation_api", *world)
    assert len(urls) >= 25
    for name, url in urls:
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code in (302, 401, 403), (name, url, response.status_code)
            if response.status_code == 302:
                assert response["Location"].startswith(reverse("login")), url
    client.force_login(plain_user)
    for name, url in urls:
        for method in (client.get, client.post):
            assert method(url).status_code == 403, (name, url)


def test_annotators_cannot_reach_researcher_pages_but_reach_their_own(annotator_client, world):
    for name, url in _urls("annotation", *world):
        response = annotator_client.get(url)
        if name in RESEARCHER_ONLY:
            assert response.status_code == 403, url
        elif name in BELIEF_LEASE_PAGES:
            assert response.status_code in (404, 405), (url, response.status_code)
        else:
            assert response.status_code in (200, 302, 405), (url, response.status_code)
