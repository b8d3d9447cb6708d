"""Benchmark: the CPU of rendering a participant's question (issue 23), in one process, without the server.

Prints, per language, the CPU per render (`time.process_time`, the median of 5 rounds of 300 renders) of the whole
question page (Start's answer: the layout with the question included), of its `#question` partial as an answer's
htmx swap gets it (`render_page`: the page's values, the token, the language) and of the partial's block alone
(studies/page_templates.py `render`). Rendered as the views
render them (`render_page` with the attempt's own context), on a started attempt of a study over real items, with a
draft and a question time limit so that every branch of the form is drawn. Asserts only that the pages hold the
question (never timings).

    make bench   # or: pytest tests/perf/test_question_render.py -m perf -s
"""
from __future__ import annotations

import statistics
import time

import pytest
from django.test import RequestFactory
from django.utils import translation

from annotation.models import Item
from studies.models import Attempt, StudyStatus
from studies.services import attempt_question, attempt_start, study_create, study_join
from studies.views.participant_pages import render_page
from studies.views.participants import _question_context
from tests.support.items import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db]

ROUNDS, RENDERS = 5, 300


def _cpu_ms(render) -> float:
    for _ in range(20):
        render()
    rounds = []
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(RENDERS):
            render()
        rounds.append((time.process_time() - started) / RENDERS * 1000)
    return statistics.median(rounds)


def test_the_cpu_of_rendering_a_question(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test")
    ids = list(Item.objects.order_by("pk").values_list("pk", flat=True)[:200])
    study = study_create(slug="render", item_ids=ids, status=StudyStatus.OPEN, per_participant=15, raters=3,
                         time_limit_seconds=3600, question_time_limit_seconds=240, completion_code="R")
    joined = study_join(study=study, participant_id="render-1")
    attempt_start(attempt_id=joined.pk)
    attempt = Attempt.objects.select_related("study").get(pk=joined.pk)
    question = attempt_question(attempt=attempt)
    request = RequestFactory().post("/")
    request.htmx = False
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    from studies.page_templates import render
    print(f"\nRendering a question (item {question.lease.item_id}), CPU per render, median of {ROUNDS} x {RENDERS}:")
    context = _question_context(attempt, question)
    values = {**context, "study": attempt.study, "attempt": attempt, "urls": {}, "csrf_token": "t"}
    for language in ("en", "zh-hans"):  # the page's own words (a study in the original follows the browser)
        translation.activate(language)
        card_ms = _cpu_ms(lambda: render("studies/public/question.html#question", values))
        page = render_page(request, attempt.study, "studies/public/question.html", context, attempt=attempt)
        partial = render_page(request, attempt.study, "studies/public/question.html#question", context,
                              attempt=attempt)
        assert b'id="question"' in page.content and b"<html" in page.content
        assert partial.content.lstrip().startswith(b'<div id="question"')
        full_ms = _cpu_ms(lambda: render_page(request, attempt.study, "studies/public/question.html", context,
                                              attempt=attempt))
        partial_ms = _cpu_ms(lambda: render_page(request, attempt.study, "studies/public/question.html#question",
                                                 context, attempt=attempt))
        print(f"  {language}: whole page (Start) {full_ms:.3f} ms, #question partial (an "
              f"answer) {partial_ms:.3f} ms, the Jinja2 question alone {card_ms:.3f} ms "
              f"({len(page.content):,} and {len(partial.content):,} bytes)")
    translation.deactivate()
