"""`{% fixed %}` renders exactly what its content renders, in every language, and refuses anything that varies."""
from __future__ import annotations

import re

import pytest
from django.template import Context, Engine, TemplateSyntaxError, engines
from django.test import override_settings
from django.utils import translation

from studies.models import AttemptStatus, RefusedAnswer
from studies.services import attempt_question
from studies.views.participant_pages import participant_urls
from studies.views.participants import _question_context
from tests.studies.conftest import started_attempt

FIXED_TAGS = re.compile(r"{% (?:end)?fixed %}|{% localize off %}|{% endlocalize %}")  # both change no output
#: The Django templates of the question page that use it (the question itself is a Jinja2 template:
#: studies/page_templates.py).
PARTICIPANT_TEMPLATES = ("studies/public/base.html",)


def _source(name: str) -> str:
    project = engines["django"].engine
    return project.find_template(name)[0].source


def _plain_engine() -> Engine:
    """The project's templates with every `{% fixed %}` taken out: what Django renders without it."""
    project = engines["django"].engine
    plain = {name: FIXED_TAGS.sub("", _source(name)) for name in PARTICIPANT_TEMPLATES}
    assert all("fixed %}" in _source(name) for name in PARTICIPANT_TEMPLATES)  # the pages use it
    return Engine(dirs=project.dirs, libraries=project.libraries, loaders=[
        ("django.template.loaders.locmem.Loader", plain), "django.template.loaders.filesystem.Loader",
        "django.template.loaders.app_directories.Loader"])


def _page_context(attempt, **extra) -> dict:
    question = attempt_question(attempt=attempt)
    return {"study": attempt.study, "attempt": attempt, "AttemptStatus": AttemptStatus, "Reason": RefusedAnswer.Reason,
            "urls": participant_urls(attempt.study, attempt), "language_switch": [], "csrf_token": "T0KEN",
            **_question_context(attempt, question), **extra}


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_question_page_is_what_it_is_without_fixed_in_every_language_and_state(language, make_study):
    study = make_study(question_time_limit_seconds=60)
    attempt = started_attempt(study)
    plain = _plain_engine()
    variants = [{}, {"errors": {"chosen_option": "x", "highlights": "y", "confidence": "z"}}, {"draft_url": ""},
                {"question_limit_first": True}]
    with translation.override(language):
        for extra in variants:
            for autoescape in (True, False):
                for _ in range(2):  # the first render remembers the fixed runs, the second uses them
                    context = _page_context(attempt, **extra)
                    ours = engines["django"].engine.get_template("studies/public/question.html").render(
                        Context(context, autoescape=autoescape))
                    djangos = plain.get_template("studies/public/question.html").render(
                        Context(context, autoescape=autoescape))
                    assert ours == djangos
    assert 'data-draft="[]"' in ours and "T0KEN" in ours and "<form" in ours


def test_languages_in_turn_each_get_their_own_words_and_a_changed_setting_is_seen():
    engine = engines["django"].engine
    source = '{% load i18n static fixed_text %}{% fixed %}<b>{% translate "Time left" %}</b>{% static "a.css" %}' \
             '{% endfixed %}'
    template, seen = engine.from_string(source), []  # one template: its runs are remembered per language
    for language in ("en", "zh-hans", "en", "zh-hans"):
        with translation.override(language):
            seen.append(template.render(Context({})))
    assert seen[0] == seen[2] != seen[1] == seen[3]
    assert seen[0].startswith("<b>Time left</b>") and seen[0].endswith("a.css")
    with translation.override("en"):
        before = template.render(Context({}))
        with override_settings(STATIC_URL="/elsewhere/"):
            assert template.render(Context({})).endswith("/elsewhere/a.css")
        assert template.render(Context({})) == before


@pytest.mark.parametrize("inside", [
    "{{ name }}", '{% translate name %}', '{% translate "Time left" as label %}', '{% translate "Time left"|upper %}',
    '{% translate "Time left" noop %}', '{% translate "May" context "month" %}', '{% static name %}',
    '{% static "a.css" as url %}', "{% if name %}x{% endif %}", "{% csrf_token %}",
])
def test_anything_that_could_vary_is_refused_when_the_template_is_loaded(inside):
    with pytest.raises(TemplateSyntaxError, match="'fixed' holds only"):
        engines["django"].engine.from_string("{% load i18n static fixed_text %}{% fixed %}a" + inside
                                             + "b{% endfixed %}")
