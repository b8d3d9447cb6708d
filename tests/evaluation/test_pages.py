"""Hot researcher pages: query counts do not grow with the number of runs; user-given names are escaped."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import ModelEndpoint, Result, Run, RunStatus
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db

EVIL = '<script>alert("x")</script> & <b>co</b>'


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)


def make_runs(count, *, name_prefix="ep", methods=("naive", "self-cot")):
    """`count` finished runs with a row per item, spread over three endpoints and the methods."""
    runs = []
    for n in range(count):
        endpoint, _ = ModelEndpoint.objects.get_or_create(name=f"{name_prefix} {n % 3} {EVIL}",
                                                          defaults={"kind": "builtin", "model": "first-option"})
        run = services.run_launch(endpoint=endpoint, method=methods[n % len(methods)], split="test", enqueue=False)
        Result.objects.bulk_create([
            Result(run=run, item_id=item_id, item_version=1, parse_status="ok", is_correct=i % 2 == 0, answer_index=0,
                   answer_first=i % 3 == 0, keyinfo=0.5, tokens_in=10, tokens_out=3)
            for i, item_id in enumerate(run.item_ids)
        ])
        Run.objects.filter(pk=run.pk).update(status=RunStatus.FINISHED)
        runs.append(run)
    return runs


def count_queries(fetch):
    with CaptureQueriesContext(connection) as context:
        response = fetch()
    assert response.status_code == 200, response
    return len(context.captured_queries)


def test_query_counts_do_not_grow_with_runs(researcher_client, researcher, items):
    api = APIClient()  # token auth: the user is fetched per request, like the session pages
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    pages = {
        "run list": lambda: researcher_client.get(reverse("evaluation:run_list")),
        "leaderboard": lambda: researcher_client.get(reverse("evaluation:leaderboard") + "?split=test"),
        "endpoints": lambda: researcher_client.get(reverse("evaluation:endpoint_list")),
        "api runs": lambda: api.get("/api/evaluation/runs/"),
        "api endpoints": lambda: api.get("/api/evaluation/endpoints/"),
    }
    runs = make_runs(2)
    pages["detail"] = lambda: researcher_client.get(reverse("evaluation:run_detail", args=[runs[0].pk]))
    pages["api results"] = lambda: api.get(f"/api/evaluation/runs/{runs[0].pk}/results/")
    pages["api run"] = lambda: api.get(f"/api/evaluation/runs/{runs[0].pk}/")
    before = {name: count_queries(fetch) for name, fetch in pages.items()}
    make_runs(7, name_prefix="more")
    after = {name: count_queries(fetch) for name, fetch in pages.items()}
    assert after == before
    assert before["detail"] <= 11, before  # 11: the run record (truncated, cached, spent) is one grouped query
    # The API lists read their rows in a fixed number of queries: token + role (2), count, page, and for runs
    # the progress of the page (2); results first check that the run exists.
    assert before["api runs"] <= 6 and before["api results"] <= 5 and before["api endpoints"] <= 4, before


def test_user_given_names_are_escaped_in_pages_and_svg(researcher_client, items):
    runs = make_runs(2)
    for url in (reverse("evaluation:leaderboard") + "?split=test", reverse("evaluation:run_list"),
                reverse("evaluation:endpoint_list"), reverse("evaluation:run_detail", args=[runs[0].pk])):
        html = researcher_client.get(url).content.decode()
        assert "<script>alert" not in html and "<b>co</b>" not in html, url
    compare = researcher_client.get(reverse("evaluation:leaderboard") + "?split=test").content.decode()
    svg = compare[compare.index("<svg"):compare.index("</svg>")]
    assert "&lt;script&gt;" in svg and "&amp;" in svg
    assert "<script" not in svg


def test_each_bar_carries_its_own_first_option_baseline(researcher_client, items):
    """Runs with permuted and original options have different baselines: one line for all would mislead."""
    from evaluation.figures.drawing import Bar, bar_chart

    svg = bar_chart([Bar("a", 0.5, baseline=0.48), Bar("b", 0.3, baseline=0.25), Bar("c", None)], title="t")
    assert svg.count('class="baseline"') == 2 and "48.0%" in svg and "25.0%" in svg
    runs = make_runs(2)
    Result.objects.filter(run=runs[1]).update(answer_first=False)
    compare = researcher_client.get(reverse("evaluation:leaderboard") + "?split=test").content.decode()
    svg = compare[compare.index("<svg"):compare.index("</svg>")]
    assert svg.count('class="baseline"') == 2 and "0.0%" in svg and "33.3%" in svg
    detail = researcher_client.get(reverse("evaluation:run_detail", args=[runs[0].pk])).content.decode()
    assert 'class="baseline"' in detail


def test_leaderboard_shows_one_decimal_like_table_4_and_one_option_order_at_a_time(researcher_client, items):
    runs = make_runs(2)  # 6 items, items 0, 2, 4 correct: 50.0; items 0 and 3 first: 33.3
    Run.objects.filter(pk=runs[1].pk).update(option_order="permuted")
    board = reverse("evaluation:leaderboard")
    compare = researcher_client.get(board + "?split=test").content.decode()
    assert ">50.0</a>" in compare and "33.3" in compare
    table = compare.split("<tbody>")[1].split("</tbody>")[0]
    assert "Naive</td>" in table and "Self-CoT" not in table  # the original order only, by default
    only_permuted = researcher_client.get(board + "?split=test&option_order=permuted")
    table = only_permuted.content.decode().split("<tbody>")[1].split("</tbody>")[0]
    assert "Self-CoT" in table and "Naive</td>" not in table
    bad = researcher_client.get(board + "?option_order=%3Cx%3E&split=" + "y" * 100)
    assert bad.status_code == 200 and "Select a valid choice" in bad.content.decode()
    # The old address leads here with its query.
    moved = researcher_client.get(reverse("evaluation:comparison") + "?split=test")
    assert moved.status_code == 302 and moved["Location"] == board + "?split=test"


def test_run_detail_shows_accuracy_to_one_decimal_with_the_baseline_beside_it(researcher_client, items):
    (run,) = make_runs(1)  # 3/6 correct, 2/6 with the answer shown first
    html = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "50.0% <span" in html and "(3/6;" in html and "always-first-option baseline 33.3%" in html
