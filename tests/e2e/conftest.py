"""Browser fixtures for the end-to-end tests: Debian's chromium driven by Playwright's sync API."""
import os

import pytest
from django.db import connections

from tests.conftest import CHROMIUM, require

# Playwright's sync API runs an event loop in the test thread; Django's ORM calls from it are fine here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture
def browser_page():
    """A fresh page in a headless chromium (1200x900, 15 s timeouts); page errors are printed."""
    require(CHROMIUM.exists(), f"Debian's chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
        page.set_default_timeout(15000)
        page.on("pageerror", lambda e: print("pageerror:", e))
        try:
            yield page
        finally:
            # While the browser is still open: the connections the test opened are closed here, so the
            # test database can be dropped at the end of the session.
            connections.close_all()
            browser.close()


@pytest.fixture(autouse=True)
def _close_connections_after_browser_test():
    """Live-server threads leave connections open; closing them lets the test database be dropped."""
    yield
    connections.close_all()
