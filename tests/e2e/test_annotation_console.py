"""Debian's chromium walks every annotation screen as an annotator would (the queue, verification by keys, a rewrite
typed and autosaved, the clue-graph editor with rows added, removed and typed into, a review sent back, the fix
screen showing why, history, items, adjudication, judge-label review by keys) and fails on any console error or
page error: an htmx error (`htmx:oobErrorNoTarget` when a reasoning-step input was added), a script error, a
refused request. Full-page screenshots are kept in var/test-artifacts/annotation-screens/."""
from __future__ import annotations

import pytest

from annotation.models import Adjudication, BeliefLabel, BeliefReview, ItemStatus, ReviewDecision, Stage
from annotation.services.belief import belief_queue_for
from tests.annotation.belief_support import record_free_text
from tests.annotation.workflow_support import make_items, set_k
from tests.support.screenshots import Shots, artifacts_dir

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]  # browser_page: tests/e2e/conftest.py

ARTIFACTS = artifacts_dir("annotation-screens")


class Console:
    """Every console error and uncaught page error of a page, with the URL it happened on."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on("console", lambda m: print(f"console {m.type}: {m.text}"))  # shown when the test fails
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"{page.url}: console: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(f"{page.url}: page error: {e}"))
        # htmx reports its errors as events too (and logs them): catch them even where logging were off.
        page.add_init_script("""["htmx:oobErrorNoTarget", "htmx:targetError", "htmx:swapError", "htmx:responseError",
            "htmx:sendError", "htmx:syntax:error", "htmx:onLoadError"].forEach(function (name) {
              document.addEventListener(name, function () { console.error("htmx event " + name); });
            });""")


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    with page.expect_navigation():
        page.click("main button[type=submit]")


def _settled(page) -> None:
    """No htmx request in flight (and the page's own requests done)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_every_annotation_screen_runs_without_a_console_error(live_server, browser_page, annotator, annotator2):
    set_k(Stage.VERIFICATION, 1)
    (verify_item,) = make_items(1, status=ItemStatus.VERIFICATION, start=1)
    (rewrite_item,) = make_items(1, status=ItemStatus.REWRITE, start=2)
    (graph_item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, start=3)
    (review_item,) = make_items(1, status=ItemStatus.REVIEW, start=4)
    queue = belief_queue_for(name="judge-console", order="audit", random_share=0.2, blind=False)
    record_free_text(queue, make_items(2, status=ItemStatus.PUBLISHED, source="judged"), [0.8, 0.4])
    page, base, shots = browser_page, live_server.url, Shots(ARTIFACTS)
    console = Console(page)
    _login(page, live_server, "ann1")

    page.goto(f"{base}/annotation/queue/")
    shots(page, "queue")

    # Verification, by keys: toggle a criterion off again, keep; auto-advance ends on the queue.
    page.goto(f"{base}/annotation/items/{verify_item.pk}/verify/")
    page.keyboard.press("2")
    page.keyboard.press("2")
    shots(page, "verify")
    with page.expect_navigation():
        page.keyboard.press("k")

    # Rewrite: the draft autosaves while typing, the checks follow.
    page.goto(f"{base}/annotation/items/{rewrite_item.pk}/rewrite/")
    page.fill("#id_question", rewrite_item.question + " Who?")
    page.press("#id_question", "Tab")  # leaving the field sends it (htmx "change"), as typing does after a pause
    page.wait_for_function("() => document.querySelector('#draft-status').textContent.includes('Draft saved')")
    page.fill("#id_option_3", "")
    page.press("#id_option_3", "Tab")
    page.wait_for_selector("#check-list li[data-kind=empty_option]")
    _settled(page)
    shots(page, "rewrite")

    # The clue-graph editor: type a clue, add a step and type into its inputs (the new input field), add and
    # remove a clue, use a suggested span.
    page.goto(f"{base}/annotation/items/{graph_item.pk}/clue-graph/")
    page.fill("#clue-0-text", "muddy boots were standing next to the desk")
    page.press("#clue-0-text", "Tab")
    page.wait_for_function("() => document.querySelector('#clue-state-0').textContent.trim() === 'approximate'")
    page.click("#step-rows + button")  # + step
    page.wait_for_selector("#step-1")
    inputs = page.locator("#step-1 input[name=step_1_inputs]")
    inputs.last.fill("someone came in from the garden")
    inputs.last.press("Tab")
    page.wait_for_function(
        "() => (document.querySelector('#step-1-input-0-note') || {}).textContent === '→ clue 1'")
    page.fill("#step-1-output", "the gardener came in")
    page.press("#step-1-output", "Tab")
    _settled(page)
    page.click("#step-0 input[name=step_0_inputs] >> nth=-1")
    page.keyboard.type("the moon was full")
    page.keyboard.press("Tab")
    page.wait_for_selector("#step-0-input-2-note.state-unanchored")
    page.click("#clue-rows + button")  # + clue
    page.wait_for_selector("#clue-3")
    page.click("#clue-3 .row-head button")  # remove it again
    page.wait_for_function("() => !document.querySelector('#clue-3')")
    page.click("#anchor-2 .fix-button")  # clue 3 is only approximately in the story: use the span found
    page.wait_for_function("() => document.querySelector('#anchor-2').dataset.state === 'exact'")
    _settled(page)
    shots(page, "clue-graph")
    # The drawing reads at a normal size, its question written above it.
    font = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#graph-picture text')).fontSize)")
    assert font >= 14
    page.locator("#graph-picture").scroll_into_view_if_needed()
    assert page.locator("#graph-question").is_visible()
    assert graph_item.question in page.inner_text("#graph-question")

    # Review: ann1 sends an item another annotator built back, with a comment.
    page.goto(f"{base}/annotation/items/{review_item.pk}/review/")
    shots(page, "review")
    page.check("input[name=action][value=send_back]")
    page.select_option("select[name=send_back_to]", "clue_graph")
    page.fill("textarea[name=comment]", "Clue 3 is not in the story.")
    with page.expect_navigation():
        page.click("#review-form button[type=submit]")
    assert ReviewDecision.objects.get(item=review_item).comment == "Clue 3 is not in the story."

    # The other annotator opens the item to fix it: the comment is there, and who sent it.
    other = page.context.browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    other_console = Console(other)
    _login(other, live_server, "ann2")
    other.goto(f"{base}/annotation/items/{review_item.pk}/clue-graph/")
    assert "Clue 3 is not in the story." in other.inner_text("#sent-back")
    assert "ann1 sent this item back" in other.inner_text("#sent-back")
    shots(other, "sent-back")

    adjudication = Adjudication.objects.create(item=verify_item, stage=Stage.VERIFICATION)
    for path in (f"/annotation/items/{graph_item.pk}/history/", "/annotation/items/",
                 f"/annotation/items/{graph_item.pk}/", "/annotation/adjudication/",
                 f"/annotation/adjudication/{adjudication.pk}/", "/annotation/belief/"):
        page.goto(base + path)
        _settled(page)
    shots(page, "belief-queues")

    # Judge labels by keys: one key answers and opens the next label.
    with page.expect_navigation():
        page.click("#next-judge-console")
    shots(page, "belief-review")
    with page.expect_navigation():
        page.keyboard.press("1")
    page.wait_for_selector("#review-form")
    with page.expect_navigation():
        page.keyboard.press("2")
    _settled(page)
    assert BeliefReview.objects.count() == 2
    assert BeliefLabel.objects.filter(final_source="").count() == 0

    assert not console.errors + other_console.errors, "\n".join(console.errors + other_console.errors)
