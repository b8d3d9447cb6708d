"""Walk every URL pattern of the project: each page and API refuses anonymous users and users
without a role, and annotators never reach researcher pages. Participant pages (/s/) are public
by design and are checked for leaks in tests/studies."""
from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

# studies/prolific/webhook/ is Prolific's: anyone may post to it, and only a signed body is applied (tests/studies/prolific/).
PUBLIC_PREFIXES = ("s/", "accounts/", "i18n/", "healthz", "favicon.ico", "admin/", "static/", "studies/prolific/webhook/")
RESEARCHER_NAMESPACES = {"studies", "studies_api", "evaluation", "evaluation_api"}


def _walk(resolver: URLResolver, prefix: str = "", namespace: str | None = None):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry, prefix + str(entry.pattern), entry.namespace or namespace)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), namespace, entry.name


def _concrete(route: str) -> str:
    """Fill converters with plausible values; the role check must come before any lookup."""
    route = re.sub(r"\(\?P<[^>]+>[^)]*\)", "1", route)  # regex routes (DRF routers)
    route = re.sub(r"<int:[^>]+>", "1", route)
    route = re.sub(r"<uuid:[^>]+>", "00000000-0000-0000-0000-000000000000", route)
    route = re.sub(r"<[^>]+>", "x", route)
    route = route.replace("^", "").replace("$", "")
    return "/" + route


def _protected_urls():
    for route, namespace, name in _walk(get_resolver()):
        if (route.startswith(PUBLIC_PREFIXES) or route == "" or "(?P<format>" in route or "\\." in route
                or "<drf_format_suffix:" in route):
            continue
        yield _concrete(route), namespace, name


PROTECTED = sorted(set(_protected_urls()), key=lambda t: t[0])


def test_there_are_protected_urls_to_check():
    assert len(PROTECTED) >= 5


@pytest.mark.parametrize("method", ["get", "post"])
def test_anonymous_and_roleless_users_are_refused_everywhere(client, plain_user, method):
    failures = []
    for url, _namespace, name in PROTECTED:
        response = getattr(client, method)(url)
        if response.status_code not in (301, 302, 401, 403, 405):
            failures.append(f"anonymous {method.upper()} {url} ({name}) -> {response.status_code}")
        elif response.status_code in (301, 302) and "/accounts/login/" not in response.get("Location", ""):
            failures.append(f"anonymous {method.upper()} {url} ({name}) redirects to {response['Location']}")
    client.force_login(plain_user)
    for url, _namespace, name in PROTECTED:
        response = getattr(client, method)(url)
        if response.status_code not in (403, 405):
            failures.append(f"no-role {method.upper()} {url} ({name}) -> {response.status_code}")
    assert not failures, "\n".join(failures)


def test_annotators_cannot_reach_researcher_urls(annotator_client):
    failures = []
    for url, namespace, name in PROTECTED:
        if namespace in RESEARCHER_NAMESPACES or (name or "").startswith(("item_import", "progress", "agreement")):
            status = annotator_client.get(url).status_code
            if status not in (403, 405):
                failures.append(f"annotator GET {url} ({namespace}:{name}) -> {status}")
    assert not failures, "\n".join(failures)


def test_every_page_behind_a_role_is_never_cached(client, django_user_model):
    """Back after Skip showed a lease no longer held (the verification page was cacheable): every page a role
    opens (each route from the URL configuration that sends an anonymous visitor to log in, filled from stored
    objects) answers `Cache-Control: no-store` to the researcher it opens for."""
    from django.contrib.auth.models import Group

    from tests.support import hostile_world, routes

    values = hostile_world.build()
    researcher = django_user_model.objects.create_user("cache-researcher", password="pw", is_staff=True)
    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    anonymous, signed_in = client.__class__(), client
    signed_in.force_login(researcher)
    wrong, checked = [], 0
    for route in routes.all_routes(admin=False):
        for url in routes.urls(route, values):
            if url.startswith("/api/"):
                continue  # DRF's views: not pages a browser goes Back to
            gate = anonymous.get(url)
            if gate.status_code not in (301, 302) or "/accounts/login/" not in gate.get("Location", ""):
                continue  # public (participants' pages, the login)
            response = signed_in.get(url)
            if response.status_code == 200:
                checked += 1
                if "no-store" not in response.get("Cache-Control", ""):
                    wrong.append(f"{url} ({route.name}): Cache-Control {response.get('Cache-Control')!r}")
    assert checked >= 40, checked
    assert not wrong, "\n".join(wrong)
