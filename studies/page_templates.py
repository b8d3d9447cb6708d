"""The compiled templates of a participant's question: the story, its highlighting and the answer form (Jinja2).

A question is the page a participant meets fifteen times: Start answers with it (a whole page) and every answer with
the next one (the htmx partial). Rendered by Django's template language, node by node, it was the largest part of a
start's and an answer's CPU in the web workers. Jinja2 compiles a template to Python code once per process, so the
same markup renders in about 0.24 ms where Django's took 0.60 ms as the partial (`tests/perf/test_question_render.py`
prints the page's, the partial's and the Jinja2 part's CPU). The page's layout and
the partial that names it stay Django templates (`studies/public/question.html` and its `#question` partial,
`instructions.html`): they include these with the `{% jinja_include %}` tag (studies.templatetags.jinja_include),
which hands over the Django context as it is.

The environment is the project's Jinja2 template engine (settings TEMPLATES, `studies/jinja2/`): autoescaping on,
an undefined name or attribute renders as nothing and chains (`errors.chosen_option` without errors), as in Django's
templates. Strings to translate are written `{{ _("literal") }}`, a form `makemessages` reads too;
`tests/project/test_translations.py` checks that every one of them is in the catalog. `_` looks a string up in
Django's catalog once per language and keeps it, escaped (about thirty per question: looking each up every time was
most of what was left of the render); the kept words are forgotten when the languages or the catalogs change.
"""
from __future__ import annotations

from collections.abc import Callable

from django.utils import translation
from jinja2 import ChainableUndefined, Environment
from markupsafe import Markup, escape

from foundation.cached_i18n import when_catalogs_change
from studies.templatetags.studies_extras import duration_hms


class _Words(dict):
    """A language's translations of the literals asked so far, escaped: msgid -> Markup."""

    def __init__(self, language: str | None):
        super().__init__()
        self.language = language

    def __missing__(self, message: str) -> Markup:
        with translation.override(self.language):
            text = self[message] = escape(translation.gettext(message))
        return text


_languages: dict[str | None, _Words] = {}


def words(language: str | None) -> Callable[[str], Markup]:
    """`_` of a template rendered in `language`: a literal's translation, looked up once."""
    table = _languages.get(language)
    if table is None:
        table = _languages[language] = _Words(language)
    return table.__getitem__


def translate(message: str) -> Markup:
    """`_` in the active language (a render that does not pass its own)."""
    return words(translation.get_language())(message)


when_catalogs_change(_languages.clear)


def load_templates() -> None:
    """Compile the question's templates now (gunicorn's master, before the workers fork and the objects are frozen):
    no worker compiles them in a participant's first request."""
    from django.template import engines
    from django.template.loader import get_template

    for name in ("studies/public/question_card.html", "studies/public/item_form.html"):
        engines["jinja2"].get_template(name)
    for name in ("studies/public/question.html", "studies/public/instructions.html", "studies/public/base.html",
                 "base.html"):  # the pages and the layouts they extend (loaded by name when a page renders)
        get_template(name)


def environment(**options) -> Environment:
    options["undefined"] = ChainableUndefined
    env = Environment(**options)
    env.globals["_"] = translate
    env.filters["duration_hms"] = duration_hms
    return env
