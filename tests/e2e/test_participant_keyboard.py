"""A participant in Debian's chromium highlights clues with the keyboard alone and by touch, and the timer stays
in view, warns at 5 minutes and at 1 minute (to screen readers too) and ends on the page the study defines."""
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from annotation.models import Item
from studies.models import Attempt, AttemptStatus, Response, StudyStatus
from studies.services import study_create
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser_page):
    """The shared browser page; this test's database connections closed while the browser is still open."""
    yield browser_page
    connections.close_all()


def _study(detectbench_dir, slug, **fields):
    ids = import_items(detectbench_dir, 4)
    fields = {"per_participant": 2, "raters": 1, "time_limit_seconds": 1800, "status": StudyStatus.OPEN,
              "completion_code": "KEYS-OK", **fields}
    return study_create(slug=slug, item_ids=ids, **fields)


def _start(page, live_server, slug, pid):
    # The first page also starts chromium's renderer: on a loaded machine that takes a while.
    page.goto(f"{live_server.url}/s/{slug}/?PROLIFIC_PID={pid}", timeout=60000)
    page.check("input[name=consent]")
    page.click("button[type=submit]")
    page.click("#start")
    page.wait_for_selector("#question .kbd-caret", state="attached")  # question.js has set up the story
    return Attempt.objects.get(external_participant_id=pid)


def _shown_context(attempt) -> str:
    lease = attempt.leases.filter(shown_at__isnull=False, status="active").order_by("position").first()
    return Item.objects.get(pk=lease.item_id).context


def _tab_to(page, element_id: str, limit: int = 30) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.id") == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id}")


def _wait_until(page, expression: str, timeout: int = 5000) -> None:
    """Poll a JavaScript expression from the test (page.wait_for_function evaluates strings: the CSP forbids that)."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout} ms: {expression}")
        time.sleep(0.05)


def _tab_until(page, condition: str, limit: int = 30) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(condition):
            return
    raise AssertionError(f"Tab never reached: {condition}")


def _press(page, key: str, times: int) -> None:
    for _ in range(times):
        page.keyboard.press(key)


def test_keyboard_alone_selects_adds_and_removes_clues_and_submits(live_server, detectbench_dir, page):
    _study(detectbench_dir, "keys")
    attempt = _start(page, live_server, "keys", "kb-1")
    context = _shown_context(attempt)

    # Tab to the story; the cursor starts at its beginning and is drawn (the story is not editable).
    _tab_to(page, "context")
    assert page.locator(".kbd-caret").is_visible()
    _press(page, "ArrowRight", 4)
    _press(page, "Shift+ArrowRight", 12)
    page.keyboard.press("Enter")
    start = 4 + len(context[4:16]) - len(context[4:16].lstrip())
    first = context[4:16].strip()
    page.wait_for_selector("#context mark.clue")
    assert page.locator("#context mark.clue").inner_text() == first
    assert page.locator("[data-highlight-list] li").count() == 1
    _wait_until(page, "document.querySelector('[data-highlight-status]').textContent.includes('Clue added')")
    assert page.evaluate("document.activeElement.id") == "context"  # focus stays in the story

    # A second clue by whole words, further on, added with H.
    _press(page, "ArrowDown", 2)
    page.keyboard.press("Control+ArrowRight")
    # Whole words until the selection spans two (the browser also stops at a hyphen or an apostrophe, so
    # three presses over "well-known" select one word).
    for _ in range(12):
        page.keyboard.press("Control+Shift+ArrowRight")
        if page.evaluate("window.getSelection().toString().trim().split(/\\s+/).length >= 2"):
            break
    else:
        raise AssertionError(f"12 word steps never selected two words: {page.evaluate('window.getSelection().toString()')!r}")
    page.keyboard.press("h")
    _wait_until(page, "document.querySelectorAll('#context mark.clue').length === 2")
    second = page.locator("#context mark.clue").nth(1).inner_text()
    assert len(second.split()) >= 2 and second in context and context.index(second) > 16

    # Delete at the cursor removes the clue it stands in (the cursor sits at the end of the clue just added).
    page.keyboard.press("Delete")
    _wait_until(page, "document.querySelectorAll('#context mark.clue').length === 1")
    assert page.locator("#context mark.clue").inner_text() == first
    _wait_until(page, "document.querySelector('[data-highlight-status]').textContent.includes('Clue removed')")

    # The list's remove buttons are reachable by Tab and say what they remove.
    label = page.locator(".remove-highlight").first.get_attribute("aria-label")
    assert label == f"Remove this clue: {first}"

    # Choose an option and submit, still with the keyboard only.
    _tab_until(page, "document.activeElement.name === 'chosen_option'")
    page.keyboard.press("Space")
    _tab_until(page, "document.activeElement.hasAttribute('data-submit')")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Question 2 of 2")
    response = Response.objects.get(attempt=attempt)
    assert response.highlights == [{"start": start, "end": start + len(first), "text": first}]


def test_touch_selection_is_added_with_the_add_selection_button(live_server, detectbench_dir, page):
    _study(detectbench_dir, "touch")
    browser = page.context.browser
    phone = browser.new_context(has_touch=True, is_mobile=True, viewport={"width": 390, "height": 740})
    try:
        tab = phone.new_page()
        tab.set_default_timeout(15000)
        attempt = _start(tab, live_server, "touch", "touch-1")
        context = _shown_context(attempt)
        button = tab.locator("[data-add-selection]")
        assert button.is_disabled()
        # What the phone's selection handles leave behind: a selection of the story's first 30 characters.
        tab.evaluate("""() => { const node = document.querySelector('#context').firstChild;
                                window.getSelection().setBaseAndExtent(node, 0, node, 30); }""")
        _wait_until(tab, "!document.querySelector('[data-add-selection]').disabled")
        assert context[:30].strip()[:20] in tab.locator("[data-selection-preview]").inner_text()
        button.tap()
        tab.wait_for_selector("#context mark.clue")
        assert tab.locator("#context mark.clue").inner_text() == context[:30].strip()
        assert button.is_disabled()
        tab.locator("input[name=chosen_option]").first.tap()
        tab.locator("[data-submit]").tap()
        tab.wait_for_selector("text=Question 2 of 2")
        assert Response.objects.get(attempt=attempt).highlights[0]["text"] == context[:30].strip()
    finally:
        phone.close()


def test_sticky_timer_warns_at_five_and_one_minute_and_ends_on_the_timeout_page(live_server, detectbench_dir, page):
    _study(detectbench_dir, "clock", time_limit_seconds=310, grace_seconds=1, timeout_completion_code="LATE-42")
    page.set_viewport_size({"width": 900, "height": 500})
    attempt = _start(page, live_server, "clock", "clock-1")
    # Above five minutes there is no warning (read in one go: the clock runs on).
    left, hidden = page.evaluate("""() => {
        const [m, s] = document.querySelector('[data-seconds-left]').textContent.split(':').map(Number);
        return [m * 60 + s, document.querySelector('[data-timer-warning]').hidden]; }""")
    assert left <= 300 or hidden

    # Five minutes: shown beside the time and said once by the assertive live region.
    _wait_until(page, "document.getElementById('timer-announcer').textContent === 'Less than 5 minutes left.'",
                timeout=25000)
    assert page.locator("[data-timer-warning]").inner_text() == "Less than 5 minutes left."
    assert "timer-warn" in page.locator("[data-timer]").get_attribute("class")
    assert page.locator("#timer-announcer").get_attribute("aria-live") == "assertive"

    # The timer stays at the top while the story scrolls.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_timeout(200)
    assert page.evaluate("window.scrollY") > 100
    top = page.locator("#timer-bar").bounding_box()["y"]
    assert -1 <= top <= 5 and page.locator("[data-seconds-left]").is_visible()

    # Answer one question, then one minute is left: the warning changes and is said again.
    page.locator("input[name=chosen_option]").first.check()
    page.click("[data-submit]")
    page.wait_for_selector("text=Question 2 of 2")
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() + timedelta(seconds=62))
    page.reload()
    _wait_until(page, "document.getElementById('timer-announcer').textContent === 'Less than 1 minute left.'",
                timeout=15000)
    assert "timer-urgent" in page.locator("[data-timer]").get_attribute("class")

    # Time runs out: the page moves on by itself to what the study defines for a timeout.
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() + timedelta(seconds=3))
    page.reload()
    page.wait_for_selector("#ended", timeout=15000)
    assert page.locator("#completion-code").inner_text() == "LATE-42"
    assert "Your answer has been saved and is kept for the study." in page.locator("#ended").inner_text()
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.EXPIRED
