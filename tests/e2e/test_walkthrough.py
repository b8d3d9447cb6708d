"""The first hour of each user, played in Debian's chromium on a database set up as `make run` sets it up.

One test, three people at once (a browser context each), asserting on what every page says and keeping a
full-page screenshot of each page in var/test-artifacts/walkthrough/ (or $TEST_ARTIFACTS_DIR/walkthrough/):

- a participant takes a study with a short time limit, highlights a clue with the keyboard alone, answers,
  and while the others work the time runs out: the page moves on by itself to the end page with what the
  study defines for a timeout (here a return instruction) and the answer kept;
- an annotator starts from an empty work queue (which says who fills it), a researcher queues items, and two
  annotators take one item through verification, rewrite, clue graph and review to published;
- a researcher imports a JSONL file on the import page, creates a study from the imported split with the
  study form (minutes, the practice item picker) and launches a model run that a real Celery worker computes.
"""
from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connections

from annotation.models import Item, ItemStatus
from evaluation.models import Run
from studies.models import Attempt, AttemptStatus, Response, Study
from tests.conftest import start_celery_worker
from tests.support.make_run import DEMO_PASSWORDS, RUN_SH, RUN_SH_LINES, make_run_database
from tests.support.screenshots import Shots, artifacts_dir

# make_run_database() first writes the rows `migrate` writes (an earlier transactional test flushed them).
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ARTIFACTS = artifacts_dir("walkthrough")
QUICK_LIMIT = 20  # seconds: the participant's time runs out while the others work (they take about 20 s)
RETURN_TEXT = "Time is up: please return the study on Prolific so that your place goes to someone else."


def test_make_run_database_follows_run_sh():
    """The walkthrough's database is the one `make run` builds: the same commands with the same arguments."""
    run_sh = RUN_SH.read_text()
    for line in RUN_SH_LINES:
        assert line in run_sh, f"scripts/run.sh changed: update tests/support/make_run.py ({line!r})"




def _wait_until(page, expression: str, timeout: float = 10.0) -> None:
    """Poll a JavaScript expression (the CSP forbids page.wait_for_function's string evaluation)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout} s: {expression}")
        time.sleep(0.05)


def _press_until(page, key: str, condition: str, limit: int = 40) -> None:
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate(condition):
            return
    raise AssertionError(f"{key} never reached: {condition}")


#: True when the caret in the story stands right after its first whitespace-separated word.
AFTER_FIRST_WORD = """(() => {
  const story = document.getElementById('context'), sel = window.getSelection();
  if (!sel.focusNode || !story.contains(sel.focusNode)) return false;
  const before = document.createRange();
  before.setStart(story, 0);
  before.setEnd(sel.focusNode, sel.focusOffset);
  return before.toString().trim() === story.textContent.trim().split(/\\s+/)[0];
})()"""


def _text(page, selector: str = "main") -> str:
    return " ".join(page.inner_text(selector).split())


def _new_page(browser, **options):
    page = browser.new_context(viewport={"width": 1200, "height": 900}, **options).new_page()
    page.set_default_timeout(15000)
    page.on("pageerror", lambda e: print("pageerror:", e))
    return page


def _login(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/", timeout=60000)
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", DEMO_PASSWORDS[username])
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert "/accounts/login/" not in page.url, _text(page)


def _participant_starts(page, base: str, shots: Shots) -> Attempt:
    """Consent (the study's facts), instructions, Start; the first question with a clue added by keyboard."""
    page.goto(f"{base}/s/quick/?PROLIFIC_PID=walk-1&STUDY_ID=s1&SESSION_ID=x1", timeout=60000)
    consent = _text(page, "#consent")
    assert "This is a research study on how people solve detective puzzles." in consent  # the real consent text
    assert "You will answer 2 questions." in consent
    assert f"The time limit is {QUICK_LIMIT} seconds in total." in consent
    shots(page, "participant-consent")
    page.check("input[name=consent]")
    page.click("#consent button[type=submit]")
    page.wait_for_selector("#start")
    shots(page, "participant-instructions")
    page.click("#start")
    page.wait_for_selector("#question .kbd-caret", state="attached")  # question.js has set up the story
    assert "Question 1 of 2" in _text(page)
    attempt = Attempt.objects.get(external_participant_id="walk-1")

    # Keyboard alone: Tab to the story, move, select with Shift+arrows, Enter adds the clue.
    _press_until(page, "Tab", "document.activeElement && document.activeElement.id === 'context'")
    story = page.inner_text("#context")
    # The cursor starts at the beginning: word by word to the end of the first word ("Twenty-five" takes
    # three presses: the browser stops at the hyphen too).
    _press_until(page, "Control+ArrowRight", AFTER_FIRST_WORD, limit=6)
    # Whole words until the selection spans at least two (a hyphen or an apostrophe is a word stop of
    # its own for the browser, so "prize-winning" takes three presses).
    _press_until(
        page,
        "Control+Shift+ArrowRight",
        "window.getSelection().toString().trim().split(/\\s+/).length >= 2",
        limit=12,
    )
    page.keyboard.press("Enter")
    page.wait_for_selector("#context mark.clue")
    clue = page.inner_text("#context mark.clue")
    # Whole words from the second one on (punctuation counts as a word stop for the cursor).
    words = clue.split()
    assert len(words) >= 2 and clue.strip() in story and story.split()[1].startswith(words[0]), (clue, story[:80])
    _wait_until(page, "document.querySelector('[data-highlight-status]').textContent.includes('Clue added')")
    shots(page, "participant-question-1-clue-by-keyboard")
    _press_until(page, "Tab", "document.activeElement.name === 'chosen_option'")
    page.keyboard.press("Space")
    _press_until(page, "Tab", "document.activeElement.hasAttribute('data-submit')")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Question 2 of 2")
    assert page.is_visible("[data-seconds-left]")
    shots(page, "participant-question-2")
    (response,) = Response.objects.filter(attempt=attempt)
    assert [h["text"] for h in response.highlights] == [clue.strip()]
    return attempt


def _participant_times_out(page, attempt: Attempt, shots: Shots) -> None:
    """Nobody touches the page: at the deadline it moves on to the study's timeout page by itself."""
    remaining = (attempt.deadline - attempt.started_at).total_seconds() if attempt.deadline else QUICK_LIMIT
    page.wait_for_selector("#ended", timeout=int((remaining + 30) * 1000))
    ended = _text(page, "#ended")
    assert "Time is up" in ended and f"The time limit of {QUICK_LIMIT} seconds has passed." in ended
    assert "Your answer has been saved and is kept for the study." in ended
    assert RETURN_TEXT in _text(page, "#return-instruction")
    assert page.locator("#completion-code").count() == 0  # this study defines no code for a timeout
    shots(page, "participant-timeout-end-page")
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.EXPIRED
    assert attempt.responses.count() == 1


def _annotator_hour(annotator, annotator2, researcher, base: str, shots: Shots) -> Item:
    """Empty queue -> queued by a researcher -> verification x2 -> rewrite -> clue graph -> review: published."""
    annotator.goto(f"{base}/annotation/queue/")
    empty = _text(annotator, "#queue-empty")
    assert "Nothing to work on yet" in empty and "a researcher queues imported items" in empty
    assert "30 imported items are waiting to be queued." in empty
    assert "Ask a researcher to queue items" in empty and "import_items" not in _text(annotator)
    assert annotator.is_disabled("#stage-verification button[type=submit]")
    shots(annotator, "annotator-empty-queue")

    researcher.goto(f"{base}/annotation/progress/")
    researcher.select_option("#enter-workflow select[name=split]", "train")
    researcher.click("#enter-workflow button[type=submit]")
    assert "6 imported items will be queued for verification." in _text(researcher, "#confirm-enter-workflow")
    shots(researcher, "researcher-queue-confirm")
    researcher.click("#confirm-enter-workflow button[type=submit]")
    researcher.wait_for_load_state()
    assert researcher.inner_text("#status-table [data-status=verification]") == "6"

    annotator.reload()
    assert "6 items in this stage" in _text(annotator, "#stage-verification")
    annotator.click("#stage-verification button[type=submit]")
    annotator.wait_for_url("**/verify/")
    item = Item.objects.get(pk=int(re.search(r"/items/(\d+)/verify/", annotator.url).group(1)))
    assert item.split == "train"
    for button in ("#keep-button", "#delete-button"):
        assert annotator.is_visible(f"{button} kbd")
    shots(annotator, "annotator-verify")
    with annotator.expect_navigation():
        annotator.keyboard.press("k")  # one key: kept, and the next item opens by itself
    assert f"Saved: keep for {item}." in _text(annotator, ".messages")

    # Verification needs two annotators (k = 2): the second one gets the same item first.
    annotator2.goto(f"{base}/annotation/queue/")
    annotator2.click("#stage-verification button[type=submit]")
    annotator2.wait_for_url(f"**/items/{item.pk}/verify/")
    with annotator2.expect_navigation():
        annotator2.keyboard.press("k")
    item.refresh_from_db()
    assert item.status == ItemStatus.REWRITE

    annotator.goto(f"{base}/annotation/queue/")
    annotator.click("#stage-rewrite button[type=submit]")
    annotator.wait_for_url(f"**/items/{item.pk}/rewrite/")
    checks = _text(annotator)
    assert "options are the same" not in checks
    shots(annotator, "annotator-rewrite")
    with annotator.expect_navigation():
        annotator.click("#rewrite-form button[name=finish]")
    item.refresh_from_db()
    assert item.status == ItemStatus.CLUE_GRAPH, _text(annotator)

    annotator.goto(f"{base}/annotation/queue/")
    annotator.click("#stage-clue_graph button[type=submit]")
    annotator.wait_for_url(f"**/items/{item.pk}/clue-graph/")
    annotator.wait_for_selector("#graph-picture svg")
    shots(annotator, "annotator-clue-graph")
    with annotator.expect_navigation():
        annotator.click("#cg-form button[name=finish]")
    item.refresh_from_db()
    assert item.status == ItemStatus.REVIEW, _text(annotator)

    # Review by someone who did not build the clue graph.
    annotator2.goto(f"{base}/annotation/queue/")
    annotator2.click("#stage-review button[type=submit]")
    annotator2.wait_for_url(f"**/items/{item.pk}/review/")
    annotator2.check("#review-form input[name=action][value=approve]")
    shots(annotator2, "annotator-review")
    with annotator2.expect_navigation():
        annotator2.click("#review-form button[type=submit]")
    item.refresh_from_db()
    assert item.status == ItemStatus.PUBLISHED

    annotator.goto(f"{base}/annotation/items/{item.pk}/")
    assert "Published" in _text(annotator)
    shots(annotator, "annotator-published-item")
    return item


def _researcher_hour(page, base: str, upload: Path, shots: Shots, n_items: int, worker_ready) -> None:
    """Import a file (the split is kept for the next upload), a study from it, a model run computed by Celery."""
    page.goto(f"{base}/")
    assert "Open studies" in _text(page) and "Demo study" in _text(page)
    shots(page, "researcher-dashboard")

    page.goto(f"{base}/annotation/items/import/")
    page.set_input_files("input[name=file]", str(upload))
    page.select_option("select[name=split]", "new split")  # a new split is typed on purpose
    page.fill("input[name=new_split]", "pilot")
    page.fill("input[name=source]", "walkthrough")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert f"{upload.name} into split pilot: " in _text(page, ".messages") and f"created {n_items}" in _text(page, ".messages")
    assert page.input_value("select[name=split]") == "pilot"  # the next upload keeps the chosen split
    shots(page, "researcher-imported")

    page.goto(f"{base}/studies/new/")
    page.fill("input[name=slug]", "pilot")
    page.fill("input[name=title]", "Pilot study")
    page.select_option("select[name=status]", "open")
    page.select_option("select[name=pool_split]", "pilot")
    page.fill("input[name=pool_sample]", "")  # empty = every item of the split
    page.fill("input[name=per_participant]", "4")
    page.fill("input[name=raters]", "2")
    page.fill("input[name=time_limit_minutes]", "20")
    page.fill("input[name=completion_code]", "PILOT-OK")
    # The practice item is picked by its id and question, from outside the pool (a sample puzzle).
    practice = page.locator("select[name=practice_item] option", has_text="sample #9025").get_attribute("value")
    page.select_option("select[name=practice_item]", practice)
    assert page.input_value("input[name=grace_seconds]") == "5" and page.input_value("input[name=bonus_per_correct]")
    shots(page, "researcher-study-form")
    with page.expect_navigation():
        page.click("form.study-form button[type=submit]")
    assert f"Study pilot created with {n_items} items." in _text(page, ".messages")
    assert "Check the setup" not in _text(page)  # 8 items x 2 raters = 16 answers = 4 participants x 4
    shots(page, "researcher-study-monitor")
    study = Study.objects.get(slug="pilot")
    assert (study.time_limit_seconds, study.status, study.pool.count()) == (1200, "open", n_items)
    assert study.practice_item.external_id == "9025"

    page.goto(f"{base}/s/pilot/")
    assert "The time limit is 20 minutes in total." in _text(page)

    page.goto(f"{base}/evaluation/runs/launch/")
    page.get_by_label("builtin:lexical").check()
    page.check("input[name=methods][value=naive]")
    page.fill("input[name=split]", "pilot")
    shots(page, "researcher-launch-run")
    with page.expect_navigation():
        page.click("main form button[type=submit].primary")
    run = Run.objects.get(endpoint__name="builtin:lexical", split="pilot")
    assert worker_ready.wait(60), "the Celery worker did not start"
    assert page.url.rstrip("/").endswith(f"/evaluation/runs/{run.pk}")
    deadline = time.monotonic() + 40
    while Run.objects.get(pk=run.pk).status != "finished":
        assert time.monotonic() < deadline, f"run {run.pk} is {Run.objects.get(pk=run.pk).status}"
        time.sleep(0.3)
    page.reload()
    detail = _text(page)
    assert "finished" in detail.lower() and "naive" in detail and "builtin:lexical" in detail
    assert run.results.count() == n_items
    correct = run.results.filter(is_correct=True).count()
    assert f"{n_items}/{n_items} (100%)" in detail and f"({correct}/{n_items}; 95% CI" in detail
    shots(page, "researcher-run-finished")


def _lap(since: float, what: str) -> float:
    now = time.monotonic()
    print(f"walkthrough: {what}: {now - since:.1f} s")
    return now


@pytest.fixture
def make_run_db(transactional_db):
    """The database as `make run` leaves it, plus a study with a short time limit for the participant.

    Set up before the browser starts: Playwright's sync API runs an event loop that `evaluate` must not meet.
    """
    started = time.monotonic()
    make_run_database()
    call_command("create_study", "--slug", "quick", "--title", "Quick study", "--split", "test",
                 "--per-participant", "2", "--raters", "1", "--time-limit", str(QUICK_LIMIT), "--status", "open",
                 "--completion-code", "QUICK-DONE", "--timeout-instruction", RETURN_TEXT)
    print(f"make run database: {time.monotonic() - started:.1f} s")


@pytest.fixture
def upload_file(detectbench_dir, tmp_path) -> Path:
    """Eight real DetectBench test records, as a researcher would upload them."""
    lines = (detectbench_dir / "test.jsonl").read_text(encoding="utf-8").splitlines()[:8]
    path = tmp_path / "pilot.jsonl"
    path.write_text("\n".join(json.dumps(json.loads(line), ensure_ascii=False) for line in lines) + "\n",
                    encoding="utf-8")
    return path


def test_first_hour_of_a_participant_an_annotator_and_a_researcher(live_server, make_run_db, upload_file, tmp_path,
                                                                   browser_page):
    started = time.monotonic()
    # The worker starts beside the browser work (it is needed only once the researcher launches a run).
    workers: list = []
    worker_ready = threading.Event()
    threading.Thread(target=lambda: (workers.append(start_celery_worker(tmp_path)), worker_ready.set()),
                     daemon=True).start()
    shots = Shots(ARTIFACTS)
    base = live_server.url
    browser = browser_page.context.browser
    participant = browser_page
    annotator, annotator2, researcher = (_new_page(browser) for _ in range(3))
    try:
        attempt = _participant_starts(participant, base, shots)
        lap = _lap(started, "participant to question 2")
        for page, name in ((annotator, "annotator"), (annotator2, "annotator2"), (researcher, "researcher")):
            _login(page, base, name)
        _annotator_hour(annotator, annotator2, researcher, base, shots)
        lap = _lap(lap, "logins and the annotator's hour")
        _researcher_hour(researcher, base, upload_file, shots, n_items=8, worker_ready=worker_ready)
        lap = _lap(lap, "researcher's hour")
        _participant_times_out(participant, attempt, shots)
        _lap(lap, "the rest of the participant's time")
    finally:
        for page in (annotator, annotator2, researcher):
            page.context.close()
        worker_ready.wait(60)
        for worker in workers:
            worker.stop()
        connections.close_all()
    print(f"walkthrough: {time.monotonic() - started:.1f} s, {shots.n} screenshots in {ARTIFACTS}")
    assert shots.n >= 15
