"""foundation.downloads: every file the app hands out is saved under a name made of letters, digits, `.`, `_` and
`-`, whatever the values it is built from (a split, a queue's, a judge configuration's or a study's name).

The discovery asks every route of the URL configuration (tests/support/routes.py) with every format, in a world
whose free text holds formulas (tests/support/hostile_world.py) and whose split is hostile too: quotes, a
semicolon, a line break, angle brackets and Chinese. Before, a quote ended the header's file name early (a name
ending in `.html"` saved a page), a line break was a 500 and Chinese garbled the whole header.
"""
from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from django.http import HttpResponse
from django.test import Client

from annotation.models import Item
from evaluation.models import Run
from foundation.downloads import attach, download_name
from tests.support import hostile_world, routes

HOSTILE_SPLIT = 'x"; y=".html\r\n测试<svg onload=1>'
FORMATS = ("csv", "json", "jsonl", "tex", "svg", "png", "pdf")
#: What the header may be: a quoted ASCII name, or RFC 6266's UTF-8 form (Django's content_disposition_header).
_QUOTED = re.compile(r'^attachment; filename="([A-Za-z0-9._-]+)"$')
_EXTENDED = re.compile(r"^attachment; filename\*=utf-8''([A-Za-z0-9%._~-]+)$")


def _saved_name(header: str) -> str | None:
    if match := _QUOTED.match(header):
        return match.group(1)
    if match := _EXTENDED.match(header):
        return unquote(match.group(1))
    return None


@pytest.mark.parametrize("stem, expected", [
    ('leaderboard-<svg onload=alert(1)>.html"; x="', "leaderboard--svg-onload-alert-1-.html-x.csv"),
    ("a\r\nb", "a-b.csv"), ("测试", "测试.csv"), ("...", "download.csv"), ("", "download.csv"),
    (".hidden", "hidden.csv"), ("trust-q_1.v2", "trust-q_1.v2.csv"),
])
def test_a_name_keeps_only_letters_digits_dots_underscores_and_dashes(stem, expected):
    assert download_name(stem, "csv") == expected
    header = attach(HttpResponse(), stem, "csv")["Content-Disposition"]
    assert _saved_name(header) == expected


def test_a_long_name_is_cut():
    assert len(download_name("x" * 1000, "json")) == 120 + len(".json")


@pytest.fixture
def hostile(db, django_user_model):
    from django.contrib.auth.models import Group

    values = hostile_world.build()
    Item.objects.update(split=HOSTILE_SPLIT)
    Run.objects.update(split=HOSTILE_SPLIT)
    researcher = django_user_model.objects.create_user("files-researcher", password="pw", is_staff=True)
    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    return client, values


def test_every_download_is_saved_under_a_safe_name_with_its_format(hostile):
    client, values = hostile
    a, b = values["runs"]
    # A hostile split; two runs compared (as CSV); the leaderboard by runs.
    asked = [{"split": HOSTILE_SPLIT}, {"a": a, "b": b, "format": "csv"}, {"runs": f"{a},{b}"}]
    downloads, failures = {}, []
    for route in routes.all_routes(admin=False):
        for url in routes.urls(route, values, formats=FORMATS):
            for query in asked:
                response = client.get(url, query)
                if response.status_code >= 500:
                    failures.append(f"{route.name} {url} {query}: {response.status_code}")
                header = response.get("Content-Disposition")
                if header is None:
                    continue
                if header.startswith("inline;"):  # shown, not saved: the API schema (drf-spectacular's own name)
                    assert route.name == ":schema" and header == 'inline; filename="DetectBench Web API.yaml"'
                    continue
                name = _saved_name(header)
                downloads.setdefault(route.name, set()).add(name)
                if name is None or not re.fullmatch(r"[\w.-]+", name) or name.startswith("."):
                    failures.append(f"{route.name} {url} {query}: {header!r}")
                elif not any(name.endswith("." + fmt) for fmt in FORMATS) or (
                        url.rsplit(".", 1)[-1] in FORMATS and not name.endswith("." + url.rsplit(".", 1)[-1])):
                    failures.append(f"{route.name} {url} {query}: saved as {name!r}")
    print(f"\nroutes with downloads: {len(downloads)}: {sorted(downloads)}")
    assert not failures, "\n".join(failures[:30])
    # A floor, not a list: the study, trust, agreement and judge-quality exports, the leaderboard and its pairwise
    # tests, a run's rows, the figures and the one-scale files. Fewer means the discovery stopped finding them.
    assert len(downloads) >= 13, sorted(downloads)
    assert any("测试" in name for names in downloads.values() for name in names if name)
