"""Debian's chromium, from the database `make run` builds: a researcher launches a sweep of three built-in
models x two methods from the launch form (the estimate shown first), watches the runs' progress bars move
on the runs list without reloading while a real Celery worker computes them, then opens the leaderboard, a
run's item drill-down and every figure. Full-page screenshots of each step are kept in
var/test-artifacts/sweep/ (or $TEST_ARTIFACTS_DIR/sweep/)."""
from __future__ import annotations

import re
import threading
import time

import pytest
from django.db import connections

from evaluation.figures.data import FIGURES
from evaluation.models import Run
from tests.conftest import start_celery_worker
from tests.support.make_run import DEMO_PASSWORDS, make_run_database
from tests.support.screenshots import Shots, artifacts_dir

# make_run_database() first writes the rows `migrate` writes (an earlier transactional test flushed them).
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ARTIFACTS = artifacts_dir("sweep")
MODELS = ("builtin:first-option", "builtin:lexical", "builtin:random")
METHODS = ("naive-key-info", "ps-cot")
FILE_MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}




@pytest.fixture
def make_run_db(transactional_db):
    """The database as `make run` leaves it (set up before the browser starts: `evaluate` runs an event loop)."""
    make_run_database()


def _login(page, base: str) -> None:
    page.goto(f"{base}/accounts/login/", timeout=60000)
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", DEMO_PASSWORDS["researcher"])
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert "/accounts/login/" not in page.url


def _done(page, run_ids) -> list[int]:
    """The done counts the runs list shows now (its rows are swapped in by htmx every 2 s)."""
    return [int(page.locator(f"tr.run-row[data-run='{pk}']").get_attribute("data-done") or 0) for pk in run_ids]


def test_a_researcher_sweeps_three_models_by_two_methods_and_reads_the_results(live_server, make_run_db,
                                                                               browser_page, tmp_path):
    started = time.monotonic()
    shots, base, page = Shots(ARTIFACTS), live_server.url, browser_page
    before = set(Run.objects.values_list("pk", flat=True))
    _login(page, base)

    # The sweep: nothing is ticked until the researcher ticks it; the estimate counts every pair.
    page.goto(f"{base}/evaluation/runs/launch/")
    assert page.locator("input[name=endpoints]:checked").count() == 0
    assert page.locator("input[name=methods]:checked").count() == 0
    for model in MODELS:
        page.get_by_label(model).check()
    for method in METHODS:
        page.check(f"input[name=methods][value={method}]")
    page.fill("input[name=split]", "test")
    page.fill("input[name=chunk_size]", "3")  # 8 tasks per run: the bars usually move in several steps
    page.wait_for_selector("#launch-estimate .requests[data-runs='6']")
    requests = int(page.get_attribute("#launch-estimate .requests", "data-requests"))
    assert requests == 6 * 24  # 24 test items of the sample data, one request each
    shots(page, "sweep-form-with-estimate")
    with page.expect_navigation():
        page.click("main form button[type=submit].primary")
    assert page.url.rstrip("/").endswith("/evaluation/runs")
    runs = list(Run.objects.exclude(pk__in=before).select_related("endpoint").order_by("pk"))
    assert sorted((r.endpoint.name, r.method) for r in runs) == sorted((m, x) for m in MODELS for x in METHODS)
    run_ids = [r.pk for r in runs]

    # No worker yet: the bars stand at 0. Then a worker starts, and the bars move while the page stays.
    assert _done(page, run_ids) == [0] * 6
    shots(page, "runs-queued")
    page.evaluate("window.__sweepPage = 'not reloaded'")
    workers: list = []
    threading.Thread(target=lambda: workers.append(start_celery_worker(tmp_path, concurrency=1)), daemon=True).start()
    seen = [sum(_done(page, run_ids))]
    try:
        deadline = time.monotonic() + 90
        while seen[-1] < 6 * 24:
            assert time.monotonic() < deadline, f"the runs list still shows {seen[-1]} of {6 * 24} rows done"
            page.wait_for_timeout(250)
            done = sum(_done(page, run_ids))
            if done != seen[-1]:
                seen.append(done)
                if len(seen) == 2:
                    shots(page, "runs-moving")
        # From 0 up, never down, on the same page; the steps in between depend on the machine's speed (printed).
        assert seen[0] == 0 and seen == sorted(seen) and len(seen) >= 2, seen
        assert page.evaluate("window.__sweepPage") == "not reloaded"
        page.wait_for_selector("tr.run-row[data-status='finished']")
        shots(page, "runs-finished")
    finally:
        deadline = time.monotonic() + 60
        while not workers and time.monotonic() < deadline:
            time.sleep(0.2)
        for worker in workers:
            worker.stop()
        connections.close_all()
    assert all(r.status == "finished" for r in Run.objects.filter(pk__in=run_ids))

    computed_s = time.monotonic() - started
    # The leaderboard of the test split has a cell for every run of the sweep, each with its n.
    page.goto(f"{base}/evaluation/leaderboard/?split=test")
    table = page.inner_text("table.leaderboard")
    for pk in run_ids:
        assert page.locator(f"table.leaderboard a[href$='/evaluation/runs/{pk}/']").count() >= 1, pk
    assert all(name in table for name in MODELS) and "24" in table
    shots(page, "leaderboard")

    # A run's rows, and one item drilled down: the messages sent, the raw output, the clues.
    lexical = next(r for r in runs if r.endpoint.name == "builtin:lexical" and r.method == "naive-key-info")
    page.goto(f"{base}/evaluation/runs/{lexical.pk}/")
    shots(page, "run-page")
    with page.expect_navigation():
        page.locator("#results table a[href*='/results/']").first.click()
    assert re.search(rf"/evaluation/runs/{lexical.pk}/results/\d+/$", page.url)
    drill = page.inner_text("main")
    assert "Messages sent" in drill and "Raw output" in drill and "Gold clues" in drill
    shots(page, "drill-down")

    # Every figure of the split, drawn on the server and shown as SVG; each downloads as PNG, PDF and SVG.
    page.goto(f"{base}/evaluation/figures/?split=test")
    for name in FIGURES:
        page.wait_for_selector(f"#figure-{name} .figure-body svg", timeout=60000)
        assert page.locator(f"#figure-{name} .figure-note").count() == 1, name
        link = page.locator(f"#figure-{name} .downloads a").first.get_attribute("href")
        body = page.request.get(f"{base}{link}").body()  # the first download link: the PNG for a paper
        assert link.split("?")[0].endswith(".png") and body.startswith(FILE_MAGIC["png"]), (name, body[:40])
    for fmt, magic in FILE_MAGIC.items():
        body = page.request.get(f"{base}/evaluation/figures/keyinfo-accuracy.{fmt}?split=test").body()
        assert body.startswith(magic), (fmt, body[:40])
    shots(page, "figures")
    for name in FIGURES:
        page.locator(f"#figure-{name}").scroll_into_view_if_needed()
        page.locator(f"#figure-{name}").screenshot(path=str(ARTIFACTS / f"figure-{name}.png"))
    print(f"sweep e2e: {time.monotonic() - started:.1f} s ({computed_s:.1f} s to the sweep computed); done counts seen {seen}; {shots.n} screenshots and "
          f"{len(FIGURES)} figures in {ARTIFACTS}")
