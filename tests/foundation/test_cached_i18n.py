"""`{% translate %}` with the remembered literals renders exactly what Django's own tag renders: for every literal
of every template of the project, in every language, escaped or not; and the forms it leaves to Django (a
variable, a filter, a message context, noop, `as`) still work. The project's engine really loads it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core import checks
from django.template import Context, Engine, Library, engines
from django.templatetags import i18n as django_i18n
from django.utils import translation

from foundation.cached_i18n import CachedTranslateNode
from tests.conftest import REPO_DIR

_LITERAL = re.compile(r"""{%\s*(?:translate|trans)\s+("[^"]*"|'[^']*')\s*(?:as\s+\w+\s*)?%}""")


def _template_files() -> list[Path]:
    skip = {".venv", "var", "node_modules", ".git"}
    return [p for p in REPO_DIR.rglob("*.html") if not skip & set(p.relative_to(REPO_DIR).parts)
            and "templates" in p.relative_to(REPO_DIR).parts]


def _literals() -> list[str]:
    found = set()
    for path in _template_files():
        found.update(m.group(1) for m in _LITERAL.finditer(path.read_text(encoding="utf-8")))
    return sorted(found)


OURS = engines["django"].engine
#: Django's tags as they are without install(): a library of their own, with Django's parsing functions.
_plain = Library()
_plain.tags.update(django_i18n.register.tags)
_plain.filters.update(django_i18n.register.filters)
_plain.tags["translate"] = _plain.tags["trans"] = django_i18n.do_translate
register = _plain  # what DJANGOS loads for {% load i18n %}
DJANGOS = Engine(libraries={"i18n": "tests.foundation.test_cached_i18n"})


def _both(source: str, context: dict | None = None, autoescape: bool = True) -> tuple[str, str]:
    return (OURS.from_string(source).render(Context(context or {}, autoescape=autoescape)),
            DJANGOS.from_string(source).render(Context(context or {}, autoescape=autoescape)))


def test_the_project_engine_loads_the_remembering_tag_and_django_checks_find_nothing_to_say():
    nodes = OURS.from_string('{% load i18n %}{% translate "Time left" %}{% trans "Time left" %}').nodelist
    assert sum(isinstance(node, CachedTranslateNode) for node in nodes) == 2
    assert not [m for m in checks.run_checks() if m.id.startswith("templates.")]
    plain = DJANGOS.from_string('{% load i18n %}{% translate "Time left" %}').nodelist
    assert not any(isinstance(node, CachedTranslateNode) for node in plain)  # the comparison is with Django's own
    assert len(_literals()) > 200  # the scan found the project's templates


@pytest.mark.parametrize("language", [code for code, _ in settings.LANGUAGES])
def test_every_literal_of_every_template_renders_as_django_renders_it(language):
    literals = _literals()
    source = "{% load i18n %}" + "\n".join(f"{{% translate {literal} %}}" for literal in literals)
    with translation.override(language):
        for autoescape in (True, False):
            for _ in range(2):  # the first render fills the cache, the second reads it
                ours, djangos = _both(source, autoescape=autoescape)
                assert ours.split("\n") == djangos.split("\n")
    with translation.override("zh-hans"):
        assert _both('{% load i18n %}{% translate "Time left" %}')[0] != "Time left"  # the catalog is really used


def test_languages_in_turn_each_get_their_own_words():
    source = '{% load i18n %}{% translate "Time left" %}'
    seen = []
    for language in ("en", "zh-hans", "en", "zh-hans"):
        with translation.override(language):
            ours, djangos = _both(source)
            assert ours == djangos
            seen.append(ours)
    assert seen[0] == seen[2] != seen[1] == seen[3]


@pytest.mark.parametrize("source,context", [
    ('{% load i18n %}{% translate "Time left" as label %}[{{ label }}]', {}),
    ('{% load i18n %}{% translate "Time left" noop %}', {}),
    ('{% load i18n %}{% translate "May" context "month name" %}', {}),
    ('{% load i18n %}{% translate "Time left"|upper %}', {}),
    ('{% load i18n %}{% translate word %}', {"word": "Time left"}),
    ('{% load i18n %}{% translate "100%% <sure>" %}', {}),
    ('{% load i18n %}{% blocktranslate with n=3 %}Question {{ n }}{% endblocktranslate %}{% get_current_language as l %}{{ l }}', {}),
])
def test_the_other_forms_render_as_django_renders_them(source, context):
    for language in ("en", "zh-hans"):
        with translation.override(language):
            for autoescape in (True, False):
                ours, djangos = _both(source, context, autoescape)
                assert ours == djangos


def test_every_kept_translation_is_forgotten_when_a_catalog_is_reloaded_or_a_catalog_setting_changes():
    """The caches of translated words (this module's tags, the participant pages' `_`) and the pages' static
    addresses register with when_catalogs_change: a reloaded .mo (runserver, no restart) or a catalog setting empties
    the words; a static files' setting empties the addresses."""
    from pathlib import Path

    from django.test import override_settings
    from django.utils.autoreload import file_changed

    from foundation import cached_i18n
    from studies import page_templates

    def fill():
        cached_i18n._rendered[("en", True, "x")] = "x"
        page_templates.words("en")("Time left")
        page_templates.static("css/app.css")

    def forgotten() -> bool:
        return not cached_i18n._rendered and not page_templates._languages

    fill()
    file_changed.send(sender=None, file_path=Path("locale/en/LC_MESSAGES/django.mo"))  # runserver's reload
    assert forgotten()
    fill()
    with override_settings(LOCALE_PATHS=[]):
        assert forgotten() and not page_templates._static_urls
    fill()
    with override_settings(STATIC_URL="/elsewhere/"):
        assert not page_templates._static_urls
        assert page_templates.static("css/app.css") == "/elsewhere/css/app.css"
    assert page_templates.static("css/app.css") == "/static/css/app.css"
    with override_settings(DEBUG=True):  # a manifest storage gives unhashed addresses under DEBUG
        assert not page_templates._static_urls
    fill()
    file_changed.send(sender=None, file_path=Path("studies/views/participants.py"))  # not a catalog
    assert cached_i18n._rendered and page_templates._languages and page_templates._static_urls
