"""Django's `i18n` template library with `{% translate "literal" %}` remembered per language.

Each `{% translate %}` tag looks up the active language (a context-local), builds a lazy string, looks it up in the
catalog and escapes it: when a participant's question was a Django template (about thirty such tags; it is a Jinja2
template now, studies/page_templates.py), about a sixth of the CPU of an answer on two cores. The translation of a literal in a language never changes while the process runs, so
`install()` (called when the apps are ready, detectbench_web.apps) makes the `translate` and `trans` tags of
Django's own library, the one every `{% load i18n %}` loads, build a node that keeps each rendered literal by
(language, autoescape, literal). (Registering a second library named "i18n" instead would draw Django's
templates.W003 warning.) Everything else is Django's own: tags with a variable, a filter, a message context or
`noop` render as Django renders them, and so do all other tags and filters. The cache is emptied when the
languages or the catalogs' settings change (tests).
"""
from __future__ import annotations

from collections.abc import Callable

from django.core.signals import setting_changed
from django.template.base import Variable, render_value_in_context
from django.templatetags import i18n as django_i18n
from django.utils.autoreload import file_changed
from django.utils.safestring import SafeData, mark_safe
from django.utils.translation import get_language

_rendered: dict[tuple[str | None, bool, str], str] = {}


class CachedTranslateNode(django_i18n.TranslateNode):
    def render(self, context):
        var = self.filter_expression.var
        if self.noop or self.message_context is not None or self.filter_expression.filters or \
                not isinstance(var, Variable) or var.literal is None or not isinstance(var.literal, str):
            return super().render(context)
        key = (get_language(), bool(context.autoescape), var.literal)
        value = _rendered.get(key)
        if value is None:
            var.translate = True  # as Django's node sets it on each render
            value = render_value_in_context(self.filter_expression.resolve(context), context)
            is_safe = isinstance(value, SafeData)
            value = value.replace("%%", "%")  # template text doubles percent signs
            value = mark_safe(value) if is_safe else value
            _rendered[key] = value
        if self.asvar:
            context[self.asvar] = value
            return ""
        return value


def do_translate(parser, token):
    """Django's own parsing of the tag, then the remembering node."""
    node = django_i18n.do_translate(parser, token)
    node.__class__ = CachedTranslateNode
    return node


def install() -> None:
    """The `translate` and `trans` tags of Django's i18n library parse into the remembering node (idempotent)."""
    django_i18n.register.tags["translate"] = do_translate
    django_i18n.register.tags["trans"] = do_translate


#: The settings that change what a literal translates to.
CATALOG_SETTINGS = frozenset({"LANGUAGES", "LANGUAGE_CODE", "LOCALE_PATHS", "INSTALLED_APPS", "USE_I18N"})


def when_catalogs_change(forget: Callable[[], None], *, settings: frozenset[str] = CATALOG_SETTINGS) -> None:
    """Call `forget` whenever a translation kept by a cache may be stale: a catalog setting changes (tests), or
    runserver reloads a changed .mo in place, without a restart (Django's own receiver does, for its catalogs)."""

    def on_setting(*, setting, **_):
        if setting in settings:
            forget()

    def on_file(*, file_path, **_):
        if file_path.suffix == ".mo":
            forget()

    setting_changed.connect(on_setting, weak=False)
    file_changed.connect(on_file, weak=False)


when_catalogs_change(_rendered.clear)
