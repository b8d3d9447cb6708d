"""`{% jinja_include %}`: a Jinja2 template inside a Django template, with the Django context (context processors'
values included) and the given values on top; escaped as Django would; bad uses refused when the template loads."""
from __future__ import annotations

import pytest
from django.template import Context, RequestContext, TemplateDoesNotExist, TemplateSyntaxError, engines
from django.test import RequestFactory, override_settings

DJANGO = engines["django"].engine


@pytest.fixture
def card(tmp_path, settings):
    """A Jinja2 template of our own beside the project's (an extra folder of the Jinja2 engine)."""
    folder = tmp_path / "jinja"
    (folder / "t").mkdir(parents=True)
    (folder / "t" / "card.html").write_text(
        '<p data-x="{{ x }}">{{ text }}|{{ safe }}|{{ extra }}|{{ missing.deep.er }}|{{ csrf_token }}</p>')
    templates = [dict(engine) for engine in settings.TEMPLATES]
    jinja = next(engine for engine in templates if engine["BACKEND"].endswith("Jinja2"))
    jinja["DIRS"] = [folder]
    with override_settings(TEMPLATES=templates):
        yield


def test_the_django_context_and_the_given_values_reach_the_jinja2_template_escaped(card):
    from django.utils.safestring import mark_safe

    request = RequestFactory().get("/")
    template = DJANGO.from_string('{% load jinja_include %}{% jinja_include "t/card.html" with extra=y %}')
    html = template.render(RequestContext(request, {"x": '"><script>', "text": "<b>&", "safe": mark_safe("<i>ok</i>"),
                                                    "y": "it's"}))
    # Escaped by Jinja2 (Django's safe strings kept as they are), an unknown name renders as nothing, and the CSRF
    # token of the request's context processors is there.
    assert html.startswith('<p data-x="&#34;&gt;&lt;script&gt;">&lt;b&gt;&amp;|<i>ok</i>|it&#39;s||')
    token = html.rsplit("|", 1)[1].removesuffix("</p>")
    assert len(token) == 64 and token.isalnum()


@pytest.mark.parametrize("source", [
    "{% jinja_include %}", "{% jinja_include name %}", '{% jinja_include "t/card.html" x=1 %}',
    '{% jinja_include "t/card.html" with %}', '{% jinja_include "t/card.html" with x %}',
])
def test_bad_uses_are_refused_when_the_template_loads(source):
    with pytest.raises(TemplateSyntaxError, match="jinja_include"):
        DJANGO.from_string("{% load jinja_include %}" + source)


def test_an_unknown_jinja2_template_is_djangos_error_naming_it():
    template = DJANGO.from_string('{% load jinja_include %}{% jinja_include "no/such.html" %}')
    with pytest.raises(TemplateDoesNotExist, match="no/such.html"):
        template.render(Context({}))


def test_a_given_value_wins_over_the_context_value_of_the_same_name(card):
    template = DJANGO.from_string('{% load jinja_include %}{% jinja_include "t/card.html" with text=other x="" %}')
    html = template.render(Context({"text": "from the page", "other": "given", "x": "page x"}))
    assert html.startswith('<p data-x="">given|')
