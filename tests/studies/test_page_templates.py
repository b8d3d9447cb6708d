"""studies.page_templates: `_` translates through Django's catalogs once per language, escaped, and forgets what it
kept when the languages change; the environment renders the question's templates as Django's did (undefined values
chain to nothing)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.template import engines
from django.test import override_settings
from django.utils import translation
from django.utils.autoreload import file_changed
from markupsafe import Markup

from studies import page_templates


def test_words_are_the_catalogs_in_each_language_escaped_and_looked_up_once(monkeypatch):
    english, chinese = page_templates.words("en"), page_templates.words("zh-hans")
    assert english("Time left") == "Time left" and chinese("Time left") not in ("", "Time left")
    assert isinstance(english("Time left"), Markup)
    assert english("a <b> & 'c'") == "a &lt;b&gt; &amp; &#39;c&#39;"  # an untranslated literal, escaped
    looked_up = []
    monkeypatch.setattr(translation, "gettext", lambda message: looked_up.append(message) or message)
    for _ in range(3):
        chinese("Time left")
        english("Time left")
    assert looked_up == []  # kept from the first time
    with translation.override("zh-hans"):
        assert page_templates.translate("Time left") == chinese("Time left")


def test_kept_words_are_forgotten_when_the_languages_change():
    kept = page_templates.words("en").__self__
    kept["Time left"]  # noqa: B018 - looked up and kept
    assert page_templates.words("en").__self__ is kept
    with override_settings(LANGUAGES=[("en", "English")]):
        assert page_templates.words("en").__self__ is not kept
    kept = page_templates.words("en").__self__
    file_changed.send(sender=None, file_path=Path("locale/zh_Hans/LC_MESSAGES/django.py"))
    assert page_templates.words("en").__self__ is kept  # not a catalog
    file_changed.send(sender=None, file_path=Path("locale/zh_Hans/LC_MESSAGES/django.mo"))  # runserver's reload
    assert page_templates.words("en").__self__ is not kept


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_environment_translates_escapes_and_chains_undefined_values(language):
    env = engines["jinja2"].env
    template = env.from_string('{{ _("Time left") }}|{{ text }}|{{ errors.chosen_option }}|{{ 65|duration_hms }}'
                               '|{{ _("Question %(k)s of %(n)s")|format(k=1, n="<2>") }}')
    with translation.override(language):
        html = template.render(text="<x>")
        expected = f"{translation.gettext('Time left')}|&lt;x&gt;||1:05|"
        assert html.startswith(expected)
        assert html.endswith(translation.gettext("Question %(k)s of %(n)s") % {"k": 1, "n": "&lt;2&gt;"})


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_sentences_with_a_number_take_the_catalogs_plural_forms(language):
    with translation.override(language):
        for n in (1, 2, 15):
            assert page_templates.questions_to_answer(n) == translation.ngettext(
                "You will answer %(n)s question.", "You will answer %(n)s questions.", n) % {"n": n}
            assert page_templates.answers_kept(n) == translation.ngettext(
                "Your answer has been saved and is kept for the study.",
                "Your %(k)s answers have been saved and are kept for the study.", n) % {"k": n}
    if language == "en":
        assert page_templates.questions_to_answer(1) == "You will answer 1 question."
        assert page_templates.answers_kept(3) == "Your 3 answers have been saved and are kept for the study."
        assert page_templates.answers_kept(0) == "You gave no answer before the end; nothing of this attempt counts as an answer."


def test_the_line_filters_escape_as_djangos_do_and_keep_what_is_marked_safe():
    """`linebreaks` and `linebreaksbr` give Django's filters' output under autoescaping, for plain text, for a value
    Django marked safe and for Jinja2's Markup (neither escaped twice)."""
    from django.template import Context, Template
    from django.utils.safestring import mark_safe

    env = engines["jinja2"].env
    for name in ("linebreaks", "linebreaksbr"):
        jinja = env.from_string(f"{{{{ value|{name} }}}}")
        django = Template(f"{{{{ value|{name} }}}}")
        for value in ("a <b> & 'c'\n\nd\ne", mark_safe("<em>x</em>\ny"), Markup("<em>x</em>\ny"), ""):
            expected = django.render(Context({"value": mark_safe(str(value)) if isinstance(value, Markup) else value}))
            assert jinja.render(value=value) == expected, (name, value)
    assert env.from_string("{{ value|linebreaks }}").render(value="<b>") == "<p>&lt;b&gt;</p>"


def test_static_and_url_are_djangos():
    from django.templatetags.static import static
    from django.urls import reverse

    env = engines["jinja2"].env
    assert env.from_string("{{ static('css/app.css') }}").render() == static("css/app.css")
    assert env.from_string("{{ url('studies_public:landing', 'a-b') }}").render() == reverse(
        "studies_public:landing", args=["a-b"])


def test_every_block_of_every_participant_page_rendered_alone_is_the_part_of_the_page_it_renders():
    """`render("page.html#block")` (an htmx swap's partial) is what the whole page holds for that block, for every
    block of every page (found from the compiled templates), with values that draw their branches; an unknown page
    or block is Django's TemplateDoesNotExist."""
    from django.template import TemplateDoesNotExist

    from studies.models import AttemptStatus, RefusedAnswer

    values = {"study": {"title": "T", "slug": "s", "per_participant": 3, "time_limit_seconds": 60}, "attempt": {"token": "tok", "status": "returned"},
              "AttemptStatus": AttemptStatus, "Reason": RefusedAnswer.Reason, "reason": "late", "status": 503,
              "question": {"number": 1, "total": 2, "seconds_left": 30, "lease": {"position": 0}},
              "shown": {"context": "A story.", "options": ["a", "b"]}, "urls": {"answer": "/a/"}, "csrf_token": "t",
              "counts": {"answered": 2}, "code": "C", "fields": [{"name": "STUDY_ID", "value": "x"}]}
    seen = set()
    for name in page_templates.pages():
        page = name.rsplit("/", 1)[1]
        template = engines["jinja2"].get_template(name).template
        whole = page_templates.render(name, values)
        for block in template.blocks:
            alone = page_templates.render(f"{name}#{block}", values)
            assert alone.strip() in whole and "<html" not in alone, (name, block)
            seen.add((page, block))
    assert {("question.html", "question"), ("refused.html", "refused"), ("error.html", "card")} <= seen, seen
    with pytest.raises(TemplateDoesNotExist):
        page_templates.render("studies/public/question.html#nothing", values)
    with pytest.raises(TemplateDoesNotExist):
        page_templates.render("studies/public/question.html#", values)  # no block named: not the whole page
    with pytest.raises(TemplateDoesNotExist):
        page_templates.render("studies/public/nothing.html", values)
