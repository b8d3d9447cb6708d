"""The researchers' navigation names the evaluation pages they look for: the leaderboard, the two-run comparison
and the judge runs each by its own name (the link called "Compare" opened the leaderboard)."""
import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _nav_links(html: str) -> dict[str, str]:
    nav = html[html.index("<nav"):html.index("</nav>")]
    return {text.strip(): href for href, text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', nav)}


def test_the_top_bar_has_the_leaderboard_the_run_comparison_and_the_judge_runs(researcher_client):
    links = _nav_links(researcher_client.get("/").content.decode())
    assert links["Leaderboard"] == reverse("evaluation:leaderboard")
    assert links["Compare runs"] == reverse("evaluation:run_compare")
    assert links["Judge runs"] == reverse("evaluation:judge_run_list")
    assert "Compare" not in links
    for url in (links["Leaderboard"], links["Compare runs"], links["Judge runs"]):
        assert researcher_client.get(url).status_code == 200


def test_the_links_read_in_chinese(researcher_client):
    links = _nav_links(researcher_client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())
    assert {"排行榜", "比较运行", "评判运行"} <= set(links), links
