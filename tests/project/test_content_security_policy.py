"""Content-Security-Policy: every response carries it; sources are this site only; the inline code
that still needs 'unsafe-inline' is listed exactly, so a new inline script fails here, and the
exception is refused once the list is empty."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.conftest import REPO_DIR

pytestmark = pytest.mark.django_db

# What still needs 'unsafe-inline' today: (where: a path or the app folder of a module that may
# still move, what: the start of the inline code). Moving each to a static file shrinks the list.
INLINE_SCRIPTS_TODAY: set = set()  # none left: scripts only from static files, no 'unsafe-inline'
INLINE_STYLES_TODAY: set = set()  # none in templates; see STYLE_SRC_UNSAFE_INLINE
#: matplotlib figures are embedded in pages as SVG markup, which styles its shapes with style="..."
#: attributes; so style-src keeps 'unsafe-inline' (styles cannot run code), script-src does not.
STYLE_SRC_UNSAFE_INLINE = True

SCRIPT_PATTERNS = {
    "inline <script>": re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I),
    "event handler": re.compile(r"""\son[a-z]+\s*=\s*["'][^"']*""", re.I),
    "javascript: URL": re.compile(r"""href\s*=\s*["']javascript:[^"']*""", re.I),
    "hx-on": re.compile(r"hx-on[:-]", re.I),
}
STYLE_PATTERNS = {
    "<style>": re.compile(r"<style[^>]*>", re.I),
    "style attribute": re.compile(r"""\sstyle\s*=\s*["']""", re.I),
}


def _template_files():
    for folder in [REPO_DIR / "templates", *REPO_DIR.glob("*/templates"), *REPO_DIR.glob("*/jinja2")]:
        if ".venv" not in folder.parts:
            yield from folder.rglob("*.html")


def _python_files():
    """Modules that render HTML or SVG themselves (not migrations, not tests)."""
    for app in ("annotation", "studies", "evaluation", "detectbench_web"):
        for path in (REPO_DIR / app).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path


def _found(patterns: dict, files) -> set[tuple[str, str]]:
    found = set()
    for path in files:
        text = path.read_text(errors="replace")
        for pattern in patterns.values():
            for match in pattern.finditer(text):
                found.add((str(path.relative_to(REPO_DIR)), text[match.start():match.end() + 20].strip()))
    return found


def _summarise(found: set[tuple[str, str]], known: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Each finding as its known (path, what) entry when it is one, else as found."""
    out = set()
    for path, text in found:
        entry = next(((p, w) for p, w in known if path.startswith(p) and text.startswith(w)), (path, text))
        out.add(entry)
    return out


def _htmx_indicator_styles_off() -> bool:
    base = (REPO_DIR / "templates" / "base.html").read_text()
    return re.search(r'name="htmx-config"[^>]*"includeIndicatorStyles"\s*:\s*false', base) is not None


def _policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def test_inline_scripts_are_exactly_the_known_ones():
    found = _summarise(_found(SCRIPT_PATTERNS, _template_files()), INLINE_SCRIPTS_TODAY)
    found |= _summarise({f for f in _found({"<script": SCRIPT_PATTERNS["inline <script>"]}, _python_files())},
                        INLINE_SCRIPTS_TODAY)
    assert found == INLINE_SCRIPTS_TODAY, (
        "inline script changed: move new ones to a static .js file (CSP), or drop fixed ones from the list")
    if not found:
        assert not settings.CSP_INLINE_SCRIPTS_TODAY, "no inline script left: default CSP_INLINE_SCRIPTS_TODAY off"


def test_inline_styles_are_exactly_the_known_ones():
    found = _summarise(_found(STYLE_PATTERNS, _template_files()) | _found({"<style": STYLE_PATTERNS["<style>"]},
                                                                         _python_files()), INLINE_STYLES_TODAY)
    if not _htmx_indicator_styles_off():
        found.add(("templates/base.html", "htmx includeIndicatorStyles"))
    assert found == INLINE_STYLES_TODAY, (
        "inline style changed: move new ones to a static .css file (CSP), or drop fixed ones from the list")
    assert settings.CSP_INLINE_STYLES_TODAY == STYLE_SRC_UNSAFE_INLINE


def _assert_strict(policy: dict[str, list[str]]) -> None:
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'self'"] and policy["form-action"] == ["'self'"]
    for directive in ("script-src", "style-src"):
        assert policy[directive][0] == "'self'"
        assert set(policy[directive]) <= {"'self'", "'unsafe-inline'"}, policy[directive]  # no host, no eval
    sources = [s for values in policy.values() for s in values]
    assert not [s for s in sources if s.startswith(("http:", "https:", "*")) or "." in s], sources
    assert ("'unsafe-inline'" in policy["script-src"]) == bool(INLINE_SCRIPTS_TODAY)
    assert ("'unsafe-inline'" in policy["style-src"]) == STYLE_SRC_UNSAFE_INLINE


def test_pages_carry_the_policy(client, researcher):
    pages = [reverse("login"), reverse("admin:login"), "/no-such-page/", reverse("healthz")]
    for url in pages:
        response = client.get(url)
        assert "Content-Security-Policy" in response, url
        _assert_strict(_policy(response))
    client.force_login(researcher)
    for url in [reverse("home"), reverse("annotation:item_list"), reverse("studies_api:study_list")]:
        response = client.get(url)
        assert response.status_code == 200, url
        _assert_strict(_policy(response))


def test_the_lockout_page_carries_the_policy_too(client, researcher):
    for n in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("login"), {"username": "res1", "password": f"x{n}"}, REMOTE_ADDR="192.0.2.7")
    assert response.status_code == 429
    _assert_strict(_policy(response))


def test_api_docs_need_no_inline_script_and_no_cdn(annotator_client):
    page = annotator_client.get(reverse("swagger-ui"))
    assert page.status_code == 200
    html = page.content.decode()
    assert not SCRIPT_PATTERNS["inline <script>"].search(html), html
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
    assert scripts and all(s.startswith("/") for s in scripts), scripts
    assert any("drf_spectacular_sidecar" in s for s in scripts)
    init = annotator_client.get(reverse("swagger-ui") + "?script=")
    assert init.status_code == 200 and init["Content-Type"].startswith("application/javascript")


def test_static_scripts_exist_for_every_script_tag():
    """Every <script src="{% static ... %}"> in the templates names a file the site serves itself."""
    names = set()
    for path in _template_files():
        names |= set(re.findall(r"""<script[^>]*src="\{%\s*static\s+'([^']+)'""", path.read_text()))
    assert names
    from django.contrib.staticfiles import finders

    assert not [n for n in names if finders.find(n) is None]
    assert Path(finders.find("django_htmx/htmx-2.min.js")).stat().st_size > 10_000
