"""Run pages say what happened (issue 18): the accuracy cell says why it is empty (failed, with the reason;
running; free text not judged yet), the error count counts the failed requests (a dead endpoint showed "errors 0"
beside "20 consecutive failed requests"), one tokens row, and a missing run or result is the site's 404 page with
its layout, never Django's technical page, also with DEBUG on."""
import html
import io
import re
import socket

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse

from evaluation.models import ModelEndpoint, Result, Run, RunStatus
from evaluation.selectors import runs as selectors
from evaluation.services import runs as services
from tests.support.items import import_items


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
