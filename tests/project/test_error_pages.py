"""403 / 404 / 500 pages with DEBUG off: the site's layout, a reason, a way back, never a traceback.

A test-only URLconf (this module) adds a view that raises an unexpected exception and one that
refuses; the project's handlers are the ones from detectbench_web.urls.
"""
from __future__ import annotations

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import path, reverse

from detectbench_web import urls as project_urls
from detectbench_web.views import server_error

SECRET_DETAIL = "kaboom-internal-detail-5f3a"


def _explode(request):
    raise RuntimeError(SECRET_DETAIL)


def _refuse(request):
    raise PermissionDenied("This page is for researchers.")


urlpatterns = [
    path("test-only/explode/", _explode),
    path("test-only/refuse/", _refuse),
    *project_urls.urlpatterns,
]
handler403 = project_urls.handler403
handler404 = project_urls.handler404
handler500 = project_urls.handler500

pytestmark = pytest.mark.django_db


def test_debug_is_off_in_these_tests():
    assert settings.DEBUG is False


def test_404_shows_the_page_with_the_layout_and_a_way_back(client, researcher):
    client.force_login(researcher)
    response = client.get("/no/such/page/", HTTP_REFERER="http://testserver/annotation/items/")
    assert response.status_code == 404
    text = response.content.decode()
    assert 'class="topbar"' in text and 'data-status="404"' in text
    assert "There is no page at <code>/no/such/page/</code>" in text
    assert 'href="http://testserver/annotation/items/"' in text and f'href="{reverse("home")}"' in text
    assert "Resolver404" not in text and "tried" not in text  # no URL patterns or exception names


def test_404_does_not_link_back_to_another_site(client):
    response = client.get("/nowhere/", HTTP_REFERER="https://evil.example.net/phish")
    assert response.status_code == 404
    assert "evil.example.net" not in response.content.decode()


@pytest.mark.urls(__name__)
def test_403_shows_the_reason_with_the_layout(client, annotator):
    client.force_login(annotator)
    response = client.get("/test-only/refuse/")
    assert response.status_code == 403
    text = response.content.decode()
    assert 'class="topbar"' in text and 'data-status="403"' in text
    assert "This page is for researchers." in text
    assert f'href="{reverse("home")}"' in text


def test_403_from_a_real_role_check_uses_the_page(client, annotator):
    client.force_login(annotator)
    response = client.get(reverse("studies:study_list"))
    assert response.status_code == 403
    text = response.content.decode()
    assert 'data-status="403"' in text and "This page is for researchers." in text


@pytest.mark.urls(__name__)
def test_unexpected_exception_gives_the_500_page_without_a_traceback(client, researcher):
    client.raise_request_exception = False
    client.force_login(researcher)
    response = client.get("/test-only/explode/")
    assert response.status_code == 500
    text = response.content.decode()
    assert 'data-status="500"' in text and "Something went wrong on our side" in text
    assert 'class="topbar"' in text and "css/app" in text
    for leak in (SECRET_DETAIL, "Traceback", "RuntimeError", "_explode", "File \""):
        assert leak not in text


def test_the_500_page_needs_no_database(researcher):
    request = RequestFactory().get("/somewhere/", HTTP_REFERER="http://testserver/studies/")
    request.user = researcher
    with CaptureQueriesContext(connection) as queries:
        response = server_error(request)
    assert response.status_code == 500 and len(queries) == 0
    assert 'href="http://testserver/studies/"' in response.content.decode()


def test_a_csrf_failure_uses_the_layout(researcher):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    response = client.post(reverse("logout"))
    assert response.status_code == 403
    text = response.content.decode()
    assert 'class="topbar"' in text and "This form could not be sent" in text
