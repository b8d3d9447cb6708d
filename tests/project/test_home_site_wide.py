"""Small site-wide things every page has: a favicon (and /favicon.ico is not a 404), logging configured once."""
from __future__ import annotations

import subprocess
import sys

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from tests.conftest import REPO_DIR, subprocess_env

pytestmark = pytest.mark.django_db


def test_every_page_links_the_favicon_and_favicon_ico_leads_to_it(client, annotator_client):
    page = client.get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    assert "<svg" in open(finders.find("favicon.svg")).read()
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    assert "/static/favicon.svg" in annotator_client.get(reverse("annotation:queue")).content.decode()


LOGGING_SCRIPT = """
import logging
import django
django.setup()
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseForbidden, HttpResponseServerError
from django.test import RequestFactory
from django.utils.log import log_response

request = RequestFactory().get("/x/")
try:
    raise PermissionDenied("This page is for researchers.")
except PermissionDenied as exc:
    log_response("Forbidden (Permission denied): %s", "/x/", response=HttpResponseForbidden(), request=request,
                 exception=exc)
try:
    raise ValueError("the server broke")
except ValueError as exc:
    log_response("Internal Server Error: %s", "/y/", response=HttpResponseServerError(), request=request,
                 exception=exc)
logging.getLogger("django").warning("django says this once")
logging.getLogger("annotation").warning("the app says this once")
"""


@pytest.mark.parametrize("debug", ["1", "0"])
def test_each_log_line_appears_once_and_a_403_has_no_traceback(debug):
    env = subprocess_env(DEBUG=debug, DJANGO_SETTINGS_MODULE="detectbench_web.settings.base",
                         SECRET_KEY="logging-test-secret-key-0123456789abcdefghijklmnopqrstuvwxyz")
    env.pop("LOG_LEVEL", None)
    done = subprocess.run([sys.executable, "-c", LOGGING_SCRIPT], cwd=REPO_DIR, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    log = done.stderr
    for line in ("Forbidden (Permission denied): /x/", "Internal Server Error: /y/", "django says this once",
                 "the app says this once"):
        assert log.count(line) == 1, (line, log)
    assert log.count("Traceback") == 1 and "ValueError: the server broke" in log  # the 500 keeps its traceback
    assert "PermissionDenied" not in log
