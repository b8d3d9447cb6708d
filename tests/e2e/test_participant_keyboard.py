"""A participant in Debian's chromium highlights clues with the keyboard alone and by touch, and the timer stays
in view, warns at 5 minutes and at 1 minute (to screen readers too) and ends on the page the study defines."""
import re
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
    # The highlight covers the whole words the selection touched ("stormy nigh" becomes "stormy night").
    start, end = whole_words(context, 4, 16)
    start += len(context[start:end]) - len(context[start:end].lstrip())
    first = context[start:end].strip()
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


#: A phone: Playwright's touch emulation in chromium (`(pointer: coarse)` matches) at 390x844 CSS pixels.
PHONE = {"has_touch": True, "is_mobile": True, "viewport": {"width": 390, "height": 844}, "device_scale_factor": 3}
ALONE_WORD = re.compile(r"(?<![\w'’-])[A-Za-z]{5,}(?![\w'’-])")


def whole_words(context: str, start: int, end: int) -> tuple[int, int]:
    """A passage widened to whole words (letters, digits and apostrophes inside a word)."""
    while start > 0 and re.match(r"[\w'’]", context[start - 1]) and re.match(r"[\w'’]", context[start]):
        start -= 1
    while end < len(context) and re.match(r"[\w'’]", context[end]) and re.match(r"[\w'’]", context[end - 1]):
        end += 1
    return start, end


def _clue_ranges(context: str, n: int = 3) -> list[tuple[int, int]]:
    """n passages spread over the story, each from inside one word to inside a word two or three words on (what
    a thumb on the selection handles leaves behind: "e years after young Edmu")."""
    words = list(ALONE_WORD.finditer(context))
    ranges = []
    for fraction in [(i + 0.5) / (n + 1) for i in range(n)]:
        first = next(w for w in words if w.start() >= fraction * len(context) and
                     (not ranges or w.start() > ranges[-1][1] + 20))
        last = next(w for w in words if w.start() > first.end() + 8)
        ranges.append((first.start() + 2, last.start() + 3))
    return ranges


def _select_range(tab, start: int, end: int) -> None:
    """Select the story's characters start..end as the selection handles would (the text is split by marks)."""
    tab.evaluate("""([start, end]) => {
        const story = document.getElementById('context');
        const walker = document.createTreeWalker(story, NodeFilter.SHOW_TEXT);
        const points = [];
        let node, seen = 0;
        while ((node = walker.nextNode())) {
          for (const at of [start, end]) {
            if (points.length < 2 && at >= seen && at <= seen + node.nodeValue.length && points.length === [start, end].indexOf(at))
              points.push([node, at - seen]);
          }
          seen += node.nodeValue.length;
        }
        window.getSelection().setBaseAndExtent(points[0][0], points[0][1], points[1][0], points[1][1]);
    }""", [start, end])


def _range_box(tab, start: int, end: int) -> dict:
    """The client rectangle of the story's characters start..end (the first line they are on)."""
    return tab.evaluate("""([start, end]) => {
        const story = document.getElementById('context');
        const walker = document.createTreeWalker(story, NodeFilter.SHOW_TEXT);
        let node, seen = 0;
        while ((node = walker.nextNode())) {
          if (start < seen + node.nodeValue.length) {
            const r = document.createRange();
            r.setStart(node, start - seen);
            r.setEnd(node, Math.min(node.nodeValue.length, start - seen + 2));
            const box = r.getClientRects()[0];
            return {x: box.x, y: box.y, width: box.width, height: box.height};
          }
          seen += node.nodeValue.length;
        }
    }""", [start, end])


def test_on_a_phone_three_clues_are_highlighted_beside_the_selection_and_cover_whole_words(
        live_server, detectbench_dir, page):
    """390x844 with touch: each selection gets an "Add highlight" control beside it, in view, so no clue needs a
    scroll to a button; the highlights snap to whole words; the help speaks of touch; a tapped highlight can be
    removed beside it too."""
    _study(detectbench_dir, "touch")
    phone = page.context.browser.new_context(**PHONE)
    try:
        tab = phone.new_page()
        tab.set_default_timeout(15000)
        tab.on("pageerror", lambda e: print("pageerror:", e))
        attempt = _start(tab, live_server, "touch", "touch-1")
        context = _shown_context(attempt)
        assert tab.evaluate("matchMedia('(pointer: coarse)').matches")

        # The help speaks of touch (and not of a mouse or keys); no button below the story to scroll to.
        help_text = tab.locator("[id^=highlight-help]").inner_text()
        assert "touch and hold" in help_text and "Add highlight" in help_text
        assert "Mouse" not in help_text and "Keyboard" not in help_text
        assert not tab.locator("[data-add-selection]").is_visible()

        expected = []
        for start, end in _clue_ranges(context):
            # Read on to the clue: the story scrolls as a reader scrolls it, with the clue mid-screen.
            line = _range_box(tab, start, end)
            tab.evaluate(f"window.scrollBy(0, {line['y'] - 844 * 0.45})")
            tab.wait_for_timeout(100)
            line = _range_box(tab, start, end)
            tab.touchscreen.tap(line["x"] + 2, line["y"] + line["height"] / 2)  # the thumb on the story
            _select_range(tab, start, end)
            _wait_until(tab, "!document.querySelector('[data-float]').hidden")
            scrolled = tab.evaluate("window.scrollY")
            button = tab.locator("[data-float-add]").bounding_box()
            bar = tab.locator("#timer-bar").bounding_box()
            # Beside the selection and wholly in view: under the sticky timer, above the bottom of the screen.
            assert button["y"] >= bar["y"] + bar["height"] and button["y"] + button["height"] <= 844, button
            assert 0 <= button["x"] and button["x"] + button["width"] <= 390, button
            assert abs(button["y"] - (line["y"] + line["height"])) < 200, (button, line)
            count = tab.locator("#context mark.clue").count()
            tab.touchscreen.tap(button["x"] + button["width"] / 2, button["y"] + button["height"] / 2)
            _wait_until(tab, f"document.querySelectorAll('#context mark.clue').length === {count + 1}")
            assert tab.evaluate("window.scrollY") == scrolled  # added without any scrolling
            assert tab.locator("[data-float]").is_hidden()
            expected.append(context[slice(*whole_words(context, start, end))])

        marks = tab.locator("#context mark.clue").all_inner_texts()
        assert marks == expected, (marks, expected)
        for (start, end), shown in zip(_clue_ranges(context), marks):  # whole words, not "e years … Edmu"
            assert len(shown) > end - start

        # A tap on a highlight offers to remove it, beside it; it can be added again the same way.
        second = tab.locator("#context mark.clue").nth(1)
        second.scroll_into_view_if_needed()
        line = second.evaluate("m => { const r = m.getClientRects()[0]; return {x: r.x, y: r.y, width: r.width, height: r.height}; }")
        tab.touchscreen.tap(line["x"] + line["width"] / 2, line["y"] + line["height"] / 2)
        remove = tab.locator("[data-float-remove]")
        remove.wait_for(state="visible")
        assert remove.get_attribute("aria-label") == f"Remove this clue: {expected[1]}"
        removal = remove.bounding_box()
        assert 0 <= removal["y"] and removal["y"] + removal["height"] <= 844
        tab.touchscreen.tap(removal["x"] + removal["width"] / 2, removal["y"] + removal["height"] / 2)
        _wait_until(tab, "document.querySelectorAll('#context mark.clue').length === 2")
        start, end = _clue_ranges(context)[1]
        _select_range(tab, start, end)
        add = tab.locator("[data-float-add]")
        add.wait_for(state="visible")
        add_box = add.bounding_box()
        tab.touchscreen.tap(add_box["x"] + add_box["width"] / 2, add_box["y"] + add_box["height"] / 2)
        _wait_until(tab, "document.querySelectorAll('#context mark.clue').length === 3")

        tab.locator("input[name=chosen_option]").first.tap()
        tab.locator("[data-submit]").tap()
        tab.wait_for_selector("text=Question 2 of 2")
        highlights = Response.objects.get(attempt=attempt).highlights
        assert [h["text"] for h in highlights] == expected
        for h in highlights:
            assert (h["start"], h["end"]) == whole_words(context, h["start"], h["end"])
            assert context[h["start"]:h["end"]] == h["text"]
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

    # Five minutes: shown beside the time and said once by the assertive live region. The deadline is brought
    # forward to 302 s from now (as for the minute below), so the page crosses five minutes within seconds.
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() + timedelta(seconds=302))
    page.reload()
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

    # Time runs out: the timer says so (not "Time left: Time is up") and what happens now, then the page moves on
    # by itself to what the study defines for a timeout.
    # (6 s ahead: a reload slower than the lead plus the grace second would land on the end page directly.)
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() + timedelta(seconds=6))
    page.reload()
    _wait_until(page, "document.querySelector('[data-seconds-left]').textContent === 'Time is up'", timeout=12000)
    shown = page.locator("[data-timer]").inner_text()
    assert shown.startswith("Time is up") and "Time left" not in shown, shown
    assert not page.locator("[data-timer-label]").is_visible()
    assert "Your answers so far are kept" in page.locator("[data-timer-warning]").inner_text()
    page.wait_for_selector("#ended", timeout=15000)
    assert page.locator("#completion-code").inner_text() == "LATE-42"
    assert "Your answer has been saved and is kept for the study." in page.locator("#ended").inner_text()
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.EXPIRED
