"""Run pages say what happened (issue 18): the accuracy cell says why it is empty (failed, with the reason;
running; free text not judged yet), the error count counts the failed requests (a dead endpoint showed "errors 0"
beside "20 consecutive failed requests"), one tokens row, and a missing run or result is the site's 404 page with
its layout, never Django's technical page, also with DEBUG on.

Hot researcher pages: query counts do not grow with the number of runs; user-given names are escaped."""
import html
import io
import re
import socket

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import ModelEndpoint, Result, Run, RunStatus
from evaluation.selectors import runs as selectors
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _cell(page: str, cell_id: str) -> str:
    match = re.search(rf'<(td|span) id="{cell_id}"[^>]*>(.*?)</\1>', page, re.DOTALL)
    assert match, cell_id
    return _text(match.group(2))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_a_run_failed_on_a_dead_endpoint_says_so_and_counts_its_failed_requests(detectbench_dir, researcher_client):
    """An endpoint's default settings (6 attempts, 8 requests in flight): the breaker opens after 20 failed requests
    spread over 8 items still retrying. Those items are failed rows now, and their requests are counted."""
    import_items(detectbench_dir / "test.jsonl", split="test", limit=24)
    url = f"http://127.0.0.1:{free_port()}/v1"
    services.endpoint_for_cli(base_url=url, model="m", concurrency=8)
    ModelEndpoint.objects.filter(base_url=url).update(use_cache=False)
    with pytest.raises(CommandError):
        call_command("evaluate", "--base-url", url, "--model", "m", "--split", "test", "--wait", "--no-progress",
                     "--in-process", "--no-preflight", stdout=io.StringIO(), stderr=io.StringIO())
    run = Run.objects.get()
    assert run.status == RunStatus.FAILED and "20 consecutive failed requests" in run.failure_reason
    failed = Result.objects.filter(run=run).exclude(error="")
    assert failed.count() >= 1
    attempts = sum(failed.values_list("attempts", flat=True))
    assert attempts >= 20
    page = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    accuracy = _cell(page, "accuracy-cell")
    assert accuracy.startswith("— (the run failed: the endpoint kept failing: 20 consecutive failed requests")
    assert "free text" not in accuracy and "judge this run" not in accuracy
    assert _cell(page, "progress-errors") == f"errors {failed.count()} ({attempts} failed requests, counting retries)"
    assert _cell(page, "request-errors").startswith(f"{failed.count()} rows ({attempts} failed requests")
    listing = researcher_client.get(reverse("evaluation:run_list")).content.decode()
    assert "(the run failed: the endpoint kept failing: 20 consecutive" in _text(listing)


@pytest.fixture
def items(db, detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=3)
    from annotation.models import Item
    return list(Item.objects.order_by("pk"))


def test_a_running_or_queued_run_says_no_row_is_answered_yet(items, researcher_client):
    endpoint = services.endpoint_for_cli(builtin="first-option")
    run = endpoint.runs.create(method="naive", item_ids=[i.pk for i in items], prompt_version="x",
                               status=RunStatus.RUNNING)
    page = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert _cell(page, "accuracy-cell") == "— (running: no row answered yet (0/3 done))"
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
    page = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert _cell(page, "accuracy-cell") == "— (queued: no row answered yet)"
    listing = _text(researcher_client.get(reverse("evaluation:run_list")).content.decode())
    assert "— (queued: no row answered yet)" in listing


def test_a_finished_free_text_run_says_it_is_not_judged_yet_and_offers_the_judge(items, researcher_client):
    endpoint = services.endpoint_for_cli(builtin="lexical")
    run = endpoint.runs.create(method="free-text", item_ids=[items[0].pk], prompt_version="x",
                               status=RunStatus.FINISHED)
    page = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert _cell(page, "accuracy-cell") == "— (free text: not judged yet) judge this run"
    assert selectors.accuracy_gap(run, selectors.run_summary(run=run).metrics, judged=True) == (
        "free text: judged (see the run's page)")


def test_one_tokens_row(items, researcher_client):
    endpoint = services.endpoint_for_cli(builtin="first-option")
    run = endpoint.runs.create(method="naive", item_ids=[items[0].pk], prompt_version="x", status=RunStatus.FINISHED)
    page = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert page.count("<th>Tokens") == 1 and "Tokens in / out" in page


@pytest.mark.parametrize("debug", [False, True])
def test_a_missing_run_or_result_is_the_sites_404_page(items, researcher_client, debug):
    endpoint = services.endpoint_for_cli(builtin="first-option")
    run = endpoint.runs.create(method="naive", item_ids=[items[0].pk], prompt_version="x", status=RunStatus.FINISHED)
    with override_settings(DEBUG=debug):
        for url, reason in [
            (reverse("evaluation:run_detail", args=[987654]), "There is no run 987654."),
            (reverse("evaluation:result_detail", args=[987654, 1]), "There is no run 987654."),
            (reverse("evaluation:result_detail", args=[run.pk, 987654]), f"Run {run.pk} has no result 987654."),
        ]:
            response = researcher_client.get(url)
            page = response.content.decode()
            assert response.status_code == 404, url
            assert 'data-status="404"' in page and 'class="crumbs"' not in page, url
            assert _cell(page.replace("<p id", "<span id").replace("</strong></p>", "</strong></span>"),
                         "not-found-reason") == reason
            assert "Page not found" in page and "<nav" in page  # the layout, with the navigation
            assert "technical_404" not in page and "Using the URLconf" not in page
        for name in ("evaluation:run_cancel", "evaluation:run_resume"):
            assert researcher_client.post(reverse(name, args=[987654])).status_code == 404


# --------------------------------------------------------------------------- hot pages: query counts, escaping, one decimal

EVIL = '<script>alert("x")</script> & <b>co</b>'


@pytest.fixture
def six_items(detectbench_dir):
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


def test_query_counts_do_not_grow_with_runs(researcher_client, researcher, six_items):
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


def test_user_given_names_are_escaped_in_pages_and_svg(researcher_client, six_items):
    runs = make_runs(2)
    for url in (reverse("evaluation:leaderboard") + "?split=test", reverse("evaluation:run_list"),
                reverse("evaluation:endpoint_list"), reverse("evaluation:run_detail", args=[runs[0].pk])):
        html = researcher_client.get(url).content.decode()
        assert "<script>alert" not in html and "<b>co</b>" not in html, url
    compare = researcher_client.get(reverse("evaluation:leaderboard") + "?split=test").content.decode()
    svg = compare[compare.index("<svg"):compare.index("</svg>")]
    assert "&lt;script&gt;" in svg and "&amp;" in svg
    assert "<script" not in svg


def test_each_bar_carries_its_own_first_option_baseline(researcher_client, six_items):
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


def test_leaderboard_shows_one_decimal_like_table_4_and_one_option_order_at_a_time(researcher_client, six_items):
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


def test_run_detail_shows_accuracy_to_one_decimal_with_the_baseline_beside_it(researcher_client, six_items):
    (run,) = make_runs(1)  # 3/6 correct, 2/6 with the answer shown first
    html = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "50.0% <span" in html and "(3/6;" in html and "always-first-option baseline 33.3%" in html
