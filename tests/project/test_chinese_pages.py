"""Every page of every role, rendered in Chinese, shows no English interface phrase (issue 20, point 8).

The routes come from the URL configuration (tests/support/routes.py), filled from the permission matrix's world:
a participant (in an English study, and in a study whose language is Chinese), an annotator and a researcher each
ask every non-API GET route with the browser in Chinese. What a person sees (tests/support/visible_text.py:
text, titles, placeholders, button labels; not scripts, hidden inputs or content marked `translate="no"`) may
hold no English phrase of three words or more. Data (stories, questions, options, clues, names, ids) is marked
`translate="no"` in the templates; anything else English is an interface string that is not translated.

The figures drawn on the pages are checked the same way (their SVG text), and a figure drawn as PNG in Chinese
must find a font for every character (a CJK font installed: fonts-noto-cjk or fonts-droid-fallback).
"""
from __future__ import annotations

import re
import warnings
from collections import defaultdict

import pytest
from django.test import Client

from evaluation.figures.data import FIGURES
from tests.conftest import require
from tests.project.test_permission_matrix import world  # noqa: F401  (the fixture)
from tests.support import routes
from tests.support.visible_text import ENGLISH_PHRASE, english_phrases

pytestmark = pytest.mark.django_db
CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
SVG = re.compile(r"<svg\b.*?</svg>", re.S)
POSITION = re.compile(r'name="position" value="(\d+)"')
SVG_TEXT = re.compile(r"<(text|tspan|title)\b[^>]*>([^<]+)<", re.S)
#: Phrases that are not English interface text although they look like it: none yet.
ALLOWED: set[str] = set()


def _chinese_study(world_values) -> tuple[Client, dict]:
    """A study whose language is Chinese, its items translated, and a participant who joined it."""
    from annotation.models import Item
    from studies.models import Attempt, StudyStatus
    from studies.services import study_create
    from tests.annotation.workflow_support import make_items

    items = make_items(2, source="zh", start=101)
    for item in items:
        Item.objects.filter(pk=item.pk).update(translations={"zh-hans": {
            "context": "一个下雪的冬夜，管家发现书房的门从里面锁上了。窗户开着，书桌旁放着一双沾满泥的靴子。",
            "question": "谁进了书房？", "options": ["园丁", "管家", "厨师", "没有人"]}})
    study = study_create(slug="zh-study", title="推理研究", item_ids=[i.pk for i in items], per_participant=2,
                         raters=2, time_limit_seconds=600, status=StudyStatus.OPEN, language="zh-hans",
                         completion_code="CODE-5678")
    participant = Client(raise_request_exception=False)
    joined = participant.post(f"/s/{study.slug}/join/", {"consent": "yes", "PROLIFIC_PID": "zh-p1"}, **CHINESE)
    assert joined.status_code == 302, joined.status_code
    attempt = Attempt.objects.get(study=study)
    return participant, {**world_values, "study": study.slug, "token": attempt.token, "attempt": attempt.pk}


def _figure_texts(html: str) -> list[str]:
    """The text of the figures (inline SVG: labels, titles, legends, tooltips) outside what is marked as data."""
    texts = []
    for svg in SVG.findall(html):
        svg = re.sub(r"<(\w+)\b[^>]*translate=\"no\"[^>]*>.*?</\1>", "", svg, flags=re.S)
        texts += [m.group(2).strip() for m in SVG_TEXT.finditer(svg) if m.group(2).strip()]
    return texts


def _walk(client: Client, values: dict, extra: list[str], *, prefix: str = ""):
    """(url, status, html) of every non-API GET route (under `prefix`) that answers with a page, then of the
    `extra` addresses."""
    addresses = [url for route in routes.all_routes(admin=False) if not route.pattern.startswith("api/")
                 and route.pattern.startswith(prefix) for url in routes.urls(route, values)]
    for url in addresses + extra:
        response = client.get(url, **CHINESE)
        if "text/html" not in response.get("Content-Type", "") or response.status_code >= 500:
            continue
        yield url, response.status_code, response.content.decode()


def _participant_stages(client: Client, values: dict):
    """The participant pages of a Chinese study's attempt once it is started (the questions), then once every
    question is answered (the end): (stage, url, status, html)."""
    token = values["token"]
    started = client.post(f"/s/a/{token}/start/", **CHINESE)  # the first question is Start's answer
    assert started.status_code == 200
    yield "started", f"/s/a/{token}/start/", started.status_code, started.content.decode()
    yield from (("started", *page) for page in _walk(client, values, [], prefix="s/"))
    for _ in range(10):
        position = POSITION.search(client.get(f"/s/a/{token}/", **CHINESE).content.decode())
        if position is None:
            break
        client.post(f"/s/a/{token}/answer/", {"position": position.group(1), "chosen_option": "0",
                                              "highlights": "[]"}, **CHINESE)
    yield from (("finished", *page) for page in _walk(client, values, [], prefix="s/"))


def test_every_page_of_every_role_reads_in_chinese(world):  # noqa: F811
    clients, values = world
    zh_participant, zh_values = _chinese_study(values)
    visitors = [("participant", clients["participant"], values),
                ("participant in a Chinese study", zh_participant, zh_values),
                ("annotator", clients["annotator"], values), ("researcher", clients["researcher"], values),
                ("anonymous", clients["anonymous"], values)]
    # The researcher's pages also with a split or runs chosen (tables, figures, notes).
    chosen = [f"/evaluation/{page}/?split=test" for page in ("leaderboard", "figures", "quality", "one-scale")]
    chosen += [f"/evaluation/figures/{name}/?split=test" for name in FIGURES]
    chosen += [f"/evaluation/compare/runs/?a={values['run']}&b={values['run']}"]
    found: dict[str, list[str]] = defaultdict(list)
    figures: dict[str, list[str]] = defaultdict(list)
    pages: dict[str, int] = defaultdict(int)
    seen: dict[str, str] = defaultdict(str)

    def read(visitor: str, url: str, status: int, html: str) -> None:
        pages[visitor] += 1
        seen[visitor] += html
        page = f"{visitor} {url} ({status})"
        found[page] += [p for p in english_phrases(html) if p not in ALLOWED]
        figures[page] += [m.group(0) for text in _figure_texts(html) for m in ENGLISH_PHRASE.finditer(text)
                          if m.group(0) not in ALLOWED]

    for visitor, client, known in visitors:
        client.cookies["django_language"] = "zh-hans"
        for page in _walk(client, known, chosen if visitor == "researcher" else []):
            read(visitor, *page)
    for page in _walk(Client(raise_request_exception=False), zh_values, [], prefix="s/"):
        read("before joining a Chinese study", *page)
    for stage, *page in _participant_stages(zh_participant, zh_values):
        read(f"participant in a Chinese study, {stage}", *page)

    # The walk saw the consent page, a question in Chinese, then the end with its code.
    assert "参与完全自愿" in seen["before joining a Chinese study"], dict(pages)
    assert "谁进了书房" in seen["participant in a Chinese study, started"], dict(pages)
    assert "CODE-5678" in seen["participant in a Chinese study, finished"], dict(pages)
    assert pages["researcher"] >= 30 and pages["annotator"] >= 10, dict(pages)
    english = {page: sorted(set(p)) for page, p in found.items() if p}
    in_figures = {page: sorted(set(p)) for page, p in figures.items() if p}
    report = "\n".join(f"{page}: {phrases}" for page, phrases in sorted({**english, **in_figures}.items()))
    assert not english and not in_figures, \
        f"English on {len(english)} pages, in figures on {len(in_figures)}:\n{report}"


def test_a_figure_drawn_in_chinese_finds_a_font_for_every_character(world):  # noqa: F811
    """PNG and PDF downloads draw the text themselves: a Chinese label needs a CJK font (else empty boxes)."""
    from annotation.trust_figure import fonts

    cjk = fonts()["font.family"][1:]  # the app's own lookup: after DejaVu Sans, the CJK fonts it found
    require(bool(cjk), "a CJK font for Chinese figure labels (apt-get install fonts-noto-cjk)")
    clients, _ = world
    for name in FIGURES:
        for fmt in ("png", "pdf"):
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=r"Glyph \d+ .* missing from")  # matplotlib's warning
                response = clients["researcher"].get(f"/evaluation/figures/{name}.{fmt}?split=test", **CHINESE)
            assert response.status_code in (200, 422), (name, fmt, response.status_code)
