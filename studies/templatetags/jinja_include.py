"""`{% jinja_include "name" [with key=value ...] %}`: a Jinja2 template (studies.page_templates) rendered inside a
Django template, with the Django template's context (all of it, the context processors' values included: the CSRF
token, the request) and the given values on top."""
from __future__ import annotations

from django import template
from django.template import engines
from django.template.base import token_kwargs
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from studies.page_templates import words

register = template.Library()


class JinjaIncludeNode(template.Node):
    def __init__(self, name: str, extra: dict):
        self.name, self.extra = name, extra

    def render(self, context) -> str:
        values = context.flatten()
        values.update({key: value.resolve(context) for key, value in self.extra.items()})
        values["_"] = words(get_language())  # the render's language, looked up once here
        # Jinja2 autoescapes what it renders (a value Django marked safe stays as it is): the text is safe as a whole.
        # The engine's get_template: a missing template or a syntax error is Django's TemplateDoesNotExist or
        # TemplateSyntaxError (with its debug information); its compiled template is then rendered directly.
        return mark_safe(engines["jinja2"].get_template(self.name).template.render(values))


@register.tag("jinja_include")
def do_jinja_include(parser, token):
    bits = token.split_contents()
    if len(bits) < 2 or bits[1][0] not in "\"'" or bits[1][-1] != bits[1][0]:
        raise template.TemplateSyntaxError("'jinja_include' takes a quoted template name, then 'with key=value ...'")
    extra = {}
    if len(bits) > 2:
        if bits[2] != "with" or len(bits) == 3:
            raise template.TemplateSyntaxError("'jinja_include' takes 'with key=value ...' after the template name")
        extra = token_kwargs(bits[3:], parser, support_legacy=False)
        if len(extra) != len(bits) - 3:
            raise template.TemplateSyntaxError("'jinja_include' takes only key=value pairs after 'with'")
    return JinjaIncludeNode(bits[1][1:-1], extra)
