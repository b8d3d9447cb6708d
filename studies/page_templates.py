"""The participant pages' templates: compiled Jinja2 (studies/jinja2/studies/public/), rendered with few values.

A participant meets these pages in a burst: a class opens the study's link, consents, reads the instructions and
presses Start at once, then answers fifteen questions (each answer gets the next question as an htmx card). Django's
template language renders node by node and walks the layout's blocks again on every page: rendered that way, the
layout alone took more instructions than a whole `/healthz` request. Jinja2 compiles each template to Python code once
per process (`load_templates` does it in gunicorn's master), so a page costs little more than its text
(`tests/perf/test_question_render.py` prints the CPU of a page, of its htmx partial and of the partial's block alone;
`tests/perf/test_request_instructions.py` counts a participant's requests in instructions).

The environment is the project's Jinja2 template engine (settings TEMPLATES): autoescaping on, an undefined name or
attribute renders as nothing and chains (`errors.chosen_option` without errors), as in Django's templates.
A page's htmx partial is a block of it, rendered alone by `render("page.html#block", values)` (the project's
`page.html#partial` convention). `studies.views.participant_pages.render_participant_template` renders a page with
the values it needs:
`csrf_token` and `csrf_input` (the hidden field), `LANGUAGE_CODE` and `_` of the page's language.

Words: a string to translate is written `{{ _("literal") }}`, the one form `makemessages` reads in these files too
(`tests/project/test_translations.py` checks that every one is in the catalog and is read); one with values is
`{{ _("... %(name)s ...")|format(name=value) }}` (or `% {"value": ...}`: `format` takes no argument named
`value`); the values are escaped. The two sentences that change with a number are functions here
(`questions_to_answer`, `answers_kept`), where `makemessages` reads their plural forms. `_` looks a literal up in Django's catalog once per language and keeps it,
escaped (looking each up on every render was most of what was left of a question's render); the kept words and
static addresses are forgotten when the languages, the catalogs or the static files' settings change.
"""
from __future__ import annotations

from collections.abc import Callable

from django.template.defaultfilters import linebreaks_filter, linebreaksbr
from django.templatetags.static import static as django_static
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext, ngettext
from jinja2 import ChainableUndefined, Environment
from markupsafe import Markup, escape

from foundation.cached_i18n import CATALOG_SETTINGS, when_catalogs_change
from studies.templatetags.studies_extras import duration_hms, duration_words


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


def questions_to_answer(n: int) -> Markup:
    return escape(ngettext("You will answer %(n)s question.", "You will answer %(n)s questions.", n)) % {"n": n}


def answers_kept(k: int) -> Markup:
    if not k:
        return escape(gettext("You gave no answer before the end; nothing of this attempt counts as an answer."))
    return escape(ngettext("Your answer has been saved and is kept for the study.",
                           "Your %(k)s answers have been saved and are kept for the study.", k)) % {"k": k}


_static_urls: dict[str, str] = {}


def static(path: str) -> str:
    """The static file's address (the storage's, hashed in production), built once per path."""
    address = _static_urls.get(path)
    if address is None:
        address = _static_urls[path] = django_static(path)
    return address


def url(name: str, *args) -> str:
    return reverse(name, args=args)


when_catalogs_change(_languages.clear)
when_catalogs_change(_static_urls.clear,
                     settings=CATALOG_SETTINGS | {"STATIC_URL", "STORAGES", "STATIC_ROOT", "DEBUG"})  # DEBUG: unhashed


def render(name: str, values: dict) -> str:
    """The page `name` rendered with `values`; `"page.html#block"` is that block of the page alone, as an htmx swap
    takes it (the project's `page.html#partial` convention, with a Jinja2 block as the partial). A block rendered
    alone runs only its own code: what it uses (a macro, a `set`) is defined inside it, never at the page's top level.
    A missing page or block is Django's TemplateDoesNotExist and a syntax error Django's TemplateSyntaxError (the
    engine's); an `{% include %}` of a missing template raises Jinja2's TemplateNotFound when the page renders."""
    from django.template import TemplateDoesNotExist, engines

    page, partial, block = name.partition("#")
    template = engines["jinja2"].get_template(page).template
    if not partial:
        return template.render(values)
    render_block = template.blocks.get(block) if block else None
    if render_block is None:
        raise TemplateDoesNotExist(name)
    try:
        return template.environment.concat(render_block(template.new_context(values)))
    except Exception:
        return template.environment.handle_exception()  # raised again, its traceback pointing into the template


def load_templates() -> None:
    """Compile every participant page now (gunicorn's master, before the workers fork and the objects are frozen):
    no worker compiles one in a participant's request."""
    from django.template import engines

    for name in pages():
        engines["jinja2"].get_template(name)


def pages() -> list[str]:
    """Every participant page's name (each file of studies/jinja2/studies/public/), as the engine's loader finds it."""
    from django.template import engines

    return engines["jinja2"].env.list_templates(filter_func=lambda name: name.startswith("studies/public/"))


def _is_safe(value) -> bool:
    """Django's filters keep a value Django marked safe as it is; so do these, for Jinja2's Markup too."""
    return hasattr(value, "__html__")


def environment(**options) -> Environment:
    options["undefined"] = ChainableUndefined
    env = Environment(**options)
    env.globals.update({"_": translate, "static": static, "url": url, "questions_to_answer": questions_to_answer,
                        "answers_kept": answers_kept})
    env.filters.update({"duration_hms": duration_hms, "duration_words": duration_words,
                        "linebreaks": lambda value: linebreaks_filter(value, autoescape=not _is_safe(value)),
                        "linebreaksbr": lambda value: linebreaksbr(value, autoescape=not _is_safe(value))})
    return env
