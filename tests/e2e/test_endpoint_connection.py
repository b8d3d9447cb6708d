"""Debian's chromium: a researcher types an endpoint's settings into the create form and presses "Test connection":
the answer appears beside the button without leaving the page (htmx sends the form's fields), with no console
error; nothing is saved until Create."""
import pytest

from evaluation.models import ModelEndpoint
from tests.evaluation.stand_in import StandIn

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]  # browser_page: tests/e2e/conftest.py


def test_testing_the_connection_from_the_create_form(live_server, browser_page, researcher):
    page, errors = browser_page, []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "res1")
    page.fill("input[name=password]", "pw-res1")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    page.goto(f"{live_server.url}/evaluation/endpoints/")
    with StandIn(reply="1", models=("stand-in",)) as server:
        page.fill("#id_name", "local")
        page.fill("#id_base_url", server.base_url)
        page.fill("#id_model", "stand-in")
        url = page.url
        page.click("#test-connection")
        page.wait_for_selector("#connection-ok")
        assert "serves stand-in" in page.inner_text("#connection-result") and page.url == url
        page.fill("#id_model", "gpt-9")
        page.click("#test-connection")
        page.wait_for_selector("#connection-failed")
        assert "unknown model 'gpt-9'" in page.inner_text("#connection-result")
    assert not ModelEndpoint.objects.exists() and not errors, errors
