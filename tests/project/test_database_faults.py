"""A dropped database connection outside the participant pages: a GET runs once more on a fresh connection; what
cannot be retried, or fails again, is a 503 "please try again" with the site's layout (JSON for the API), never
a 500. The check before use is a setting (CONN_HEALTH_CHECKS: with a pool, foundation.postgresql's check)."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db(transaction=True)


def test_dead_connections_are_checked_before_use_with_the_pool_or_without():
    assert all(db["CONN_HEALTH_CHECKS"] for db in settings.DATABASES.values())
    assert "foundation.database_faults.DatabaseFaultMiddleware" in settings.MIDDLEWARE
    middleware = settings.MIDDLEWARE
    assert middleware.index("foundation.database_faults.DatabaseFaultMiddleware") < \
        middleware.index("django.contrib.sessions.middleware.SessionMiddleware")


def test_a_get_whose_connection_dropped_runs_once_more_and_answers(researcher, monkeypatch):
    import detectbench_web.views as views

    real, calls = views.home_dashboard, []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")
        return real(**kwargs)

    monkeypatch.setattr(views, "home_dashboard", flaky)
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    response = client.get("/")
    assert response.status_code == 200 and len(calls) == 2


def test_a_post_whose_connection_dropped_is_a_please_try_again_page_not_a_500(researcher, monkeypatch):
    from evaluation.services import runs as services

    calls = []

    def dropped(**kwargs):
        calls.append(1)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "endpoint_create", dropped)
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    response = client.post("/evaluation/endpoints/", {
        "name": "e", "kind": "builtin", "model": "random", "max_concurrency": 4, "timeout_s": 10, "max_attempts": 2})
    assert response.status_code == 503 and response.headers["Retry-After"] == "2"
    assert len(calls) == 1  # a POST is never run twice
    body = response.content.decode()
    assert "<html" in body and 'class="topbar"' in body and "Please try again" in body
    assert "Traceback" not in body and "administrator command" not in body


def test_pages_and_apis_of_every_role_answer_503_while_the_database_is_down(researcher, annotator, database_down):
    researcher_client, annotator_client = Client(raise_request_exception=False), Client(raise_request_exception=False)
    researcher_client.force_login(researcher)
    annotator_client.force_login(annotator)
    token = Token.objects.create(user=researcher).key
    api = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    anonymous = Client(raise_request_exception=False)
    with database_down:
        pages = {"researcher /studies/": researcher_client.get("/studies/"),
                 "annotator /annotation/items/": annotator_client.get("/annotation/items/"),
                 "researcher POST /evaluation/endpoints/": researcher_client.post("/evaluation/endpoints/", {}),
                 "healthz": anonymous.get("/healthz")}
        api_response = api.get("/api/studies/")
    for name, response in pages.items():
        assert response.status_code == 503, (name, response.status_code)
        body = response.content.decode()
        assert "<html" in body and "Please try again" in body and 'class="topbar"' in body, name
    get_page = pages["researcher /studies/"].content.decode()
    assert 'href="/studies/"' in get_page  # "Try again" reloads the page
    assert api_response.status_code == 503 and api_response.json()["code"] == "database_unavailable"
    # Back up: the same clients go on as before.
    assert researcher_client.get("/studies/").status_code == 200
