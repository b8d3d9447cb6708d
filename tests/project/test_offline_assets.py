"""The app works offline: no page it serves, for any role, and no static file it serves makes the browser load
anything from a host other than its own.

The rule (README, "Works offline"):

- A page may *load* only from its own host: every ``src``, ``srcset``, ``poster``, ``data`` (object), ``action``
  (form), ``formaction``, ``hx-get/post/put/patch/delete``, ``<link href>`` (stylesheets, icons, preloads,
  manifests), ``<meta http-equiv=refresh>`` target, CSS ``url()`` / ``@import`` (in ``<style>``, ``style=`` and
  stylesheets) and ``fetch()`` / ``import()`` / ``importScripts()`` / ``new Worker()`` / ``.src =`` in scripts
  is a relative URL, a URL on the app's own host, ``data:`` or ``blob:``.
- A plain link a person may follow (``<a href>`` to another host, such as the paper or the DetectBench
  repository) is allowed: the page does not load it. Text that merely mentions a URL (licence comments,
  XML namespaces such as ``http://www.w3.org/2000/svg``, help text) is not a reference.
- Every ``/static/`` file a page refers to exists (is served).

Pages are crawled per role (anonymous, participant in the demo study, annotator, researcher) from the
home page, the role's navigation and the study link, following same-host links and htmx GETs, on the
database `make run` builds. Then a real chromium opens the pages whose assets are heaviest (API docs,
a question, the clue-graph editor, figures, home) with every request to another host aborted and recorded:
none may be made, and /api/docs/ must draw its operations from the sidecar's static files.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import Resolver404, resolve

from tests.conftest import CHROMIUM, require
from tests.e2e.conftest import browser_page  # noqa: F401  (the shared chromium fixture)
from tests.support.make_run import DEMO_PASSWORDS, make_run_database

# make_run_database() first writes the rows `migrate` writes (an earlier transactional test flushed them).
MAKE_RUN_DB = pytest.mark.django_db(transaction=True)

OWN_HOST = "testserver"
# Each page kind (URL pattern) is crawled for a few of its objects and query strings, not for every item or row.
MAX_PER_ROUTE = 2
MAX_PAGES_PER_ROLE = 300
# Attributes whose URL the browser (or htmx) loads without the person choosing to follow it.
LOADED_ATTRIBUTES = {"src", "srcset", "poster", "data", "action", "formaction", "hx-get", "hx-post", "hx-put",
                     "hx-patch", "hx-delete", "background"}
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+(?:url\()?\s*['"]([^'"]+)""", re.I)
# URL literals in a loading position in JavaScript (absolute or protocol-relative only: relative ones stay home).
JS_LOADS = re.compile(
    r"""(?:\bfetch|\bimport|\bimportScripts|new\s+(?:Shared)?Worker|new\s+EventSource|new\s+WebSocket|\.open)"""
    r"""\(\s*(?:['"`]GET['"`]\s*,\s*)?['"`]((?:[a-z][a-z0-9+.-]*:)?//[^'"`\s]+)"""
    r"""|\.(?:src|href)\s*=\s*['"`]((?:[a-z][a-z0-9+.-]*:)?//[^'"`\s]+)"""
    r"""|url\(\s*\\?['"]?((?:https?:)?//[^'")\s\\]+)""",
    re.I,
)
SKIP_PATHS = ("/accounts/logout/", "/admin/logout/", "/i18n/setlang/")
SKIP_SUFFIXES = (".csv", ".jsonl", ".tex", ".pdf", ".png", ".zip")


def is_external(url: str, own_host: str = OWN_HOST) -> bool:
    """True when the URL names another host (scheme:// or //host); relative, data: and blob: URLs stay home."""
    url = url.strip()
    if not url or url.startswith(("#", "data:", "blob:", "javascript:", "mailto:", "about:")):
        return False
    if url.startswith("{") or "{{" in url:  # an htmx/template placeholder filled in on the page
        return False
    parts = urlsplit(url)
    if parts.scheme and parts.scheme not in ("http", "https", "ws", "wss"):
        return False
    return bool(parts.netloc) and parts.hostname not in (own_host, None)


class PageScan(HTMLParser):
    """Every URL a page loads (with where it is), the same-host links to crawl, the /static/ files it uses."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loaded: list[tuple[str, str]] = []   # (what, url)
        self.links: list[str] = []                # <a href> and htmx GETs: to crawl
        self.external_links: list[str] = []       # <a href> to another host: allowed, listed
        self._in = None
        self._inline: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name, value in attrs.items():
            if value is None:
                continue
            if name in LOADED_ATTRIBUTES:
                urls = [u.strip().split(" ")[0] for u in value.split(",")] if name == "srcset" else [value]
                self.loaded += [(f"<{tag} {name}>", u) for u in urls]
            if name == "style":
                self.loaded += [(f"<{tag} style>", m.group(1) or m.group(2)) for m in CSS_URL.finditer(value)]
        if tag == "link" and attrs.get("href"):
            self.loaded.append((f"<link rel={attrs.get('rel')}>", attrs["href"]))
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            target = (attrs.get("content") or "").partition("url=")[2]
            if target:
                self.loaded.append(("<meta refresh>", target))
        if tag == "a" and attrs.get("href"):
            (self.external_links if is_external(attrs["href"]) else self.links).append(attrs["href"])
        if attrs.get("hx-get"):
            self.links.append(attrs["hx-get"])
        if tag in ("style", "script"):
            self._in, self._inline = tag, []

    def handle_data(self, data):
        if self._in:
            self._inline.append(data)

    def handle_endtag(self, tag):
        if tag == self._in:
            body = "".join(self._inline)
            self.loaded += scan_css(body, "<style>") if tag == "style" else scan_js(body, "<script>")
            self._in = None


def scan_css(text: str, where: str) -> list[tuple[str, str]]:
    return [(where, m.group(1) or m.group(2)) for m in CSS_URL.finditer(text)]


def scan_js(text: str, where: str) -> list[tuple[str, str]]:
    return [(where, next(g for g in m.groups() if g)) for m in JS_LOADS.finditer(text)]


def test_the_rule_itself():
    """The checker finds what it must and lets through what the rule allows."""
    assert is_external("https://cdn.jsdelivr.net/npm/swagger-ui-dist@latest/swagger-ui.css")
    assert is_external("//unpkg.com/htmx.org")
    assert not is_external("/static/css/app.css") and not is_external("data:image/png;base64,xx")
    assert not is_external("http://testserver/api/schema/") and not is_external("?page=2")
    page = PageScan()
    page.feed('<link rel="stylesheet" href="https://fonts.googleapis.com/css"><a href="https://arxiv.org/">paper</a>'
              '<img src="//x.example/p.png"><div style="background:url(https://x.example/b.png)"></div>'
              '<style>@import "https://x.example/s.css";</style><script>fetch("https://x.example/api")</script>'
              '<form action="https://x.example/post"></form><a href="/annotation/items/">items</a>')
    external = [url for _, url in page.loaded if is_external(url)]
    assert sorted(external) == sorted(["https://fonts.googleapis.com/css", "//x.example/p.png", "https://x.example/b.png",
                                       "https://x.example/post", "https://x.example/s.css", "https://x.example/api"])
    assert page.external_links == ["https://arxiv.org/"] and page.links == ["/annotation/items/"]
    assert scan_js('const ns = "http://www.w3.org/2000/svg"; // see https://github.com/x', "js") == []
    assert scan_js("e.src='https://validator.swagger.io/v.png'", "js") == [("js", "https://validator.swagger.io/v.png")]


def _login(client: Client, username: str) -> Client:
    assert client.login(username=username, password=DEMO_PASSWORDS[username])
    return client


def crawl_participant(client: Client) -> dict:
    """A participant of the demo study: consent, instructions, then (after Start) the question page."""
    before = crawl(client, ["/s/demo/?PROLIFIC_PID=offline-1&STUDY_ID=s&SESSION_ID=x"])
    joined = client.post("/s/demo/join/", {"consent": "yes", "PROLIFIC_PID": "offline-1", "STUDY_ID": "s",
                                           "SESSION_ID": "x", "language": "en"})
    assert joined.status_code == 302, joined.status_code
    attempt_url = joined["Location"]
    instructions = crawl(client, [attempt_url])
    assert client.post(urljoin(attempt_url, "start/")).status_code in (200, 302)
    question = crawl(client, [attempt_url, urljoin(attempt_url, "no-such-page/"), "/s/demo/a/not-a-token/"])
    merged = {key: [] for key in ("violations", "errors")} | {"pages": 0, "static": set(), "external_links": set()}
    for found in (before, instructions, question):
        merged["pages"] += found["pages"]
        for key in ("violations", "errors"):
            merged[key] += found[key]
        for key in ("static", "external_links"):
            merged[key] |= found[key]
    return merged


def route_of(path: str) -> str:
    """The URL pattern a path resolves to (one page kind), or the path itself when it resolves to none.

    The admin's pages of one kind (a changelist, a change form, ...) count as one kind whatever the model.
    """
    if path.startswith("/admin/"):
        segments = [s for s in path.split("/")[2:] if s]
        return "admin:" + "/".join("<id>" if s.isdigit() else s if s in ("add", "change", "delete", "history")
                                   else "*" for s in segments)
    try:
        match = resolve(path)
    except Resolver404:
        return path
    return f"{match.namespace}:{match.url_name}:{match.route}"


def crawl(client: Client, starts: list[str]) -> dict:
    """GET every same-host page reachable from `starts`; scan each HTML page and note what it loads."""
    seen_routes: dict[str, int] = {}
    queue, visited = list(starts), set()
    found = {"pages": 0, "violations": [], "static": set(), "external_links": set(), "errors": []}
    while queue and found["pages"] < MAX_PAGES_PER_ROLE:
        url = queue.pop(0)
        parts = urlsplit(url)
        key = parts.path + ("?" + parts.query if parts.query else "")
        if key in visited or parts.path.startswith(SKIP_PATHS) or parts.path.endswith(SKIP_SUFFIXES):
            continue
        if parts.path.startswith("/static/"):
            found["static"].add(parts.path)
            continue
        route = route_of(parts.path)
        if seen_routes.get(route, 0) >= MAX_PER_ROUTE:
            continue
        visited.add(key)
        seen_routes[route] = seen_routes.get(route, 0) + 1
        response = client.get(key, HTTP_HOST=OWN_HOST)
        if response.status_code >= 500:
            found["errors"].append((key, response.status_code))
        if response.status_code in (301, 302) and not is_external(response.get("Location", "")):
            queue.append(urljoin(key, response["Location"]))
            continue
        content_type = response.get("Content-Type", "")
        if "html" not in content_type or getattr(response, "streaming", False):
            continue
        found["pages"] += 1
        page = PageScan()
        page.feed(response.content.decode("utf-8", "replace"))
        for where, loaded in page.loaded:
            if is_external(loaded):
                found["violations"].append((key, where, loaded))
            elif urlsplit(urljoin(key, loaded)).path.startswith("/static/"):
                found["static"].add(urlsplit(urljoin(key, loaded)).path)
        found["external_links"].update(page.external_links)
        for link in page.links:
            target = urljoin(key, link)
            if not is_external(target) and not link.startswith(("#", "javascript:", "mailto:")):
                queue.append(target)
    return found


@pytest.fixture
def make_run_db(transactional_db):
    """Before any browser starts (`evaluate` runs an event loop, Playwright's sync API has one running)."""
    make_run_database()


@MAKE_RUN_DB
def test_no_page_of_any_role_and_no_static_file_loads_from_another_host(make_run_db, settings):
    settings.ALLOWED_HOSTS = [OWN_HOST]
    roles = {
        "anonymous": (Client(), ["/", "/accounts/login/", "/s/demo/", "/s/no-such-study/", "/healthz"]),
        "participant": (Client(), None),
        "annotator": (_login(Client(), "annotator"), ["/", "/annotation/queue/", "/annotation/items/"]),
        "researcher": (_login(Client(), "researcher"), ["/", "/api/docs/", "/studies/", "/evaluation/runs/",
                                                        "/annotation/progress/", "/admin/"]),
    }
    static_used, report = set(), {}
    for role, (client, starts) in roles.items():
        found = crawl(client, starts) if starts else crawl_participant(client)
        report[role] = found
        static_used |= found["static"]
        print(f"{role}: {found['pages']} pages, {len(found['static'])} static files, "
              f"plain links to other hosts: {sorted(found['external_links']) or 'none'}")
        assert not found["violations"], f"{role}: pages load from other hosts: {found['violations'][:10]}"
        assert not found["errors"], f"{role}: server errors while crawling: {found['errors'][:10]}"
    assert report["researcher"]["pages"] >= 40 and report["annotator"]["pages"] >= 15
    assert report["participant"]["pages"] >= 4 and report["anonymous"]["pages"] >= 3

    # Every /static/ file a page uses is served; every static file served refers only to its own host.
    prefix = "/static/"
    missing = [p for p in static_used if finders.find(p[len(prefix):]) is None]
    assert not missing, f"pages refer to static files that are not served: {missing}"
    assert {"/static/css/app.css", "/static/django_htmx/htmx-2.min.js"} <= static_used
    assert any(p.startswith("/static/drf_spectacular_sidecar/swagger-ui-dist/") for p in static_used)
    scanned, violations = 0, []
    for finder in finders.get_finders():
        for path, storage in finder.list(["*.map", "*.md", "LICENSE*", "*.txt"]):
            if not path.endswith((".css", ".js", ".mjs", ".html", ".svg")):
                continue
            with storage.open(path) as handle:
                text = handle.read().decode("utf-8", "replace")
            scanned += 1
            scan = scan_css(text, path) if path.endswith(".css") else scan_js(text, path)
            if path.endswith((".html", ".svg")):
                page = PageScan()
                page.feed(text)
                scan += page.loaded
            violations += [(where, url) for where, url in scan if is_external(url)]
    print(f"static files scanned: {scanned}")
    assert scanned >= 10
    assert not violations, f"static files refer to other hosts: {violations[:10]}"

    # Swagger UI's default validatorUrl loads a badge from validator.swagger.io on any host but localhost
    # (so the browser test below, on localhost, would not see it): the docs page must switch it off.
    script = roles["researcher"][0].get("/api/docs/?script=").content.decode()
    assert '"validatorUrl": null' in script, script[:300]


PAGES_IN_BROWSER = ["/", "/api/docs/", "/evaluation/figures/?split=test", "/evaluation/leaderboard/?split=test",
                    "/annotation/queue/", "/studies/demo/results/"]


@MAKE_RUN_DB
def test_pages_in_chromium_make_no_request_to_another_host(make_run_db, live_server, browser_page):  # noqa: F811
    """With every request to another host aborted, the pages render completely; /api/docs/ lists operations."""
    require(CHROMIUM.exists(), f"Debian's chromium at {CHROMIUM}")
    page = browser_page
    own = urlsplit(live_server.url).netloc
    outside: list[str] = []

    def route(r):
        if urlsplit(r.request.url).netloc == own or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.context.route("**/*", route)
    failed: list[str] = []
    broken: list[str] = []

    def on_failed(request) -> None:
        # A request of our own cancelled by the next navigation (Chromium fetches the favicon late) is not
        # a failure of the page; every other failure is.
        if urlsplit(request.url).netloc == own and request.failure == "net::ERR_ABORTED":
            return
        failed.append(f"{request.url} ({request.failure})")

    def on_response(response) -> None:
        if urlsplit(response.url).netloc == own and response.status >= 400:
            broken.append(f"{response.url} ({response.status})")

    page.on("requestfailed", on_failed)
    page.on("response", on_response)
    page.goto(f"{live_server.url}/accounts/login/", timeout=60000)
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", DEMO_PASSWORDS["researcher"])
    with page.expect_navigation():
        page.click("main button[type=submit]")
    for path in PAGES_IN_BROWSER:
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, (path, response.status)
        page.wait_for_load_state("networkidle")
        if path == "/api/docs/":
            page.wait_for_selector(".swagger-ui .opblock", timeout=20000)
            assert page.locator(".swagger-ui .opblock").count() >= 20
            assert "DetectBench Web API" in page.inner_text(".swagger-ui .info")
    # A participant's question page too (question.js, the timer).
    participant = page.context.browser.new_context().new_page()
    participant.context.route("**/*", route)
    participant.goto(f"{live_server.url}/s/demo/?PROLIFIC_PID=chromium-offline")
    participant.check("input[name=consent]")
    participant.click("#consent button[type=submit]")
    participant.click("#start")
    participant.wait_for_selector("#question .kbd-caret", state="attached")
    participant.wait_for_load_state("networkidle")
    participant.context.close()
    assert outside == [], f"requests to other hosts: {outside}"
    assert failed == [], f"requests that failed: {failed}"
    assert broken == [], f"own files that did not load: {broken}"
