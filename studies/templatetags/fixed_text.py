"""`{% fixed %}...{% endfixed %}`: a run of a template that is the same on every page in a language, rendered once.

A participant page's layout (studies/public/base.html) holds fixed words and the addresses of its style sheet and
script. Rendering them node by node on every page (each tag looks up the active language, a context-local; each
static address is built again by the storage) was a part of the page's CPU. (The question itself, with most of the
page's words, is a Jinja2 template since: studies/page_templates.py.) Between `{% fixed %}` and `{% endfixed %}` only plain
text, `{% translate "literal" %}` and `{% static "literal" %}` are allowed (anything else is a TemplateSyntaxError
when the template is loaded, so nothing that varies can be kept): the run is rendered as Django renders it the
first time in each (language, autoescape) and that text is used from then on. The remembered texts are forgotten
when the languages, the catalogs' or the static files' settings change (tests).
"""
from __future__ import annotations

from django import template
from django.template.base import Node, TextNode, Variable
from django.templatetags.i18n import TranslateNode
from django.templatetags.static import StaticNode
from django.utils.translation import get_language

from foundation.cached_i18n import CATALOG_SETTINGS, when_catalogs_change

register = template.Library()

_generation = [0]  # moved on when a setting the texts depend on changes: every node renders again


class FixedNode(Node):
    def __init__(self, nodelist):
        self.nodelist = nodelist
        self._rendered: dict[tuple, str] = {}

    def render(self, context):
        key = (_generation[0], get_language(), bool(context.autoescape))
        text = self._rendered.get(key)
        if text is None:
            text = self._rendered[key] = self.nodelist.render(context)
        return text


def _is_fixed(node: Node) -> bool:
    if isinstance(node, TextNode):
        return True
    if isinstance(node, StaticNode):
        return node.varname is None and _is_literal(node.path)
    if not isinstance(node, TranslateNode) or node.asvar or node.noop or node.message_context is not None:
        return False
    return _is_literal(node.filter_expression)


def _is_literal(expression) -> bool:
    """A quoted string without filters (the parser keeps it as the string; a translate tag as a Variable of it)."""
    var = expression.var
    return not expression.filters and (isinstance(var, str) or isinstance(var, Variable) and isinstance(var.literal, str))


@register.tag("fixed")
def do_fixed(parser, token):
    if len(token.split_contents()) != 1:
        raise template.TemplateSyntaxError("'fixed' takes no arguments")
    nodelist = parser.parse(("endfixed",))
    parser.delete_first_token()
    varying = [node for node in nodelist if not _is_fixed(node)]
    if varying:
        raise template.TemplateSyntaxError(
            f"'fixed' holds only text, {{% translate \"literal\" %}} and {{% static \"literal\" %}}, not {varying[0]!r}")
    return FixedNode(nodelist)


def _forget() -> None:
    _generation[0] += 1


when_catalogs_change(_forget, settings=CATALOG_SETTINGS | {"STATIC_URL", "STORAGES", "STATIC_ROOT"})
