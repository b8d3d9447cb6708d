"""Real browser (Debian's chromium): verification with keyboard shortcuts whose hints are readable, auto-advance
to the next item after a decision (and staying when it is off), a decision shown read-only; the clue fix by
selecting text, the SVG picture and the row badge updating after the edit."""
from __future__ import annotations

import pytest

from annotation.models import ItemStatus, Stage, VerificationDecision
from tests.annotation.workflow_support import make_items, set_k

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]  # browser_page: tests/e2e/conftest.py

# The contrast of a key hint: its text colour against its own background laid over the button's.
CONTRAST = """(selector) => {
    const kbd = document.querySelector(selector);
    const rgba = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
    const over = (top, bottom) => { const a = top.length > 3 ? top[3] : 1;
        return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)); };
    const lum = (c) => { const v = c.map((x) => { x /= 255;
        return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
    const button = rgba(getComputedStyle(kbd.closest('button')).backgroundColor);
    const back = over(rgba(getComputedStyle(kbd).backgroundColor), button);
    const text = over(rgba(getComputedStyle(kbd).color), back);
    const [hi, lo] = [lum(text), lum(back)].sort((a, b) => b - a);
    return (hi + 0.05) / (lo + 0.05);
}"""


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


def test_annotator_verifies_with_keys_moves_on_by_itself_and_sees_decisions_read_only(
        live_server, browser_page, annotator):
    page = browser_page
    set_k(Stage.VERIFICATION, 1)
    first, second, third = make_items(3)
    _login(page, live_server, "ann1")

    page.goto(f"{live_server.url}/annotation/queue/")
    assert "Auto-advance is on" in page.inner_text("#auto-advance")
    page.click("#stage-verification button[type=submit]")
    page.wait_for_url(f"**/annotation/items/{first.pk}/verify/")
    # The key hints on the coloured buttons can be read (they were white on white).
    for button in ("#keep-button", "#delete-button"):
        assert page.is_visible(f"{button} kbd")
        assert page.evaluate(CONTRAST, f"{button} kbd") >= 4.5, button

    # Keyboard only: one key per item, the next item opens by itself.
    page.keyboard.press("2")
    assert page.is_checked("#crit-heavy_math")
    page.keyboard.press("2")
    assert not page.is_checked("#crit-heavy_math")
    with page.expect_navigation():
        page.keyboard.press("k")
    assert page.url.endswith(f"/annotation/items/{second.pk}/verify/")
    assert f"Saved: keep for {first}." in page.inner_text(".messages")
    page.keyboard.press("4")
    with page.expect_navigation():
        page.keyboard.press("d")
    assert page.url.endswith(f"/annotation/items/{third.pk}/verify/")

    # Turned off, the page stays on the item after the decision, and shows it read-only.
    with page.expect_navigation():
        page.click("#auto-advance button")
    assert page.url.endswith(f"/annotation/items/{third.pk}/verify/")
    assert "Auto-advance is off" in page.inner_text("#auto-advance")
    with page.expect_navigation():
        page.keyboard.press("k")
    assert page.url.endswith(f"/annotation/items/{third.pk}/verify/")
    assert "You have decided: Keep" in page.inner_text("#my-decision")
    assert page.locator("#keep-button").count() == 0 and page.is_disabled("#crit-bias")
    page.keyboard.press("d")  # no shortcut left for a decision already made: nothing is sent
    page.wait_for_timeout(300)
    assert page.url.endswith(f"/annotation/items/{third.pk}/verify/")

    decisions = {d.item_id: (d.decision, d.criteria) for d in VerificationDecision.objects.all()}
    assert decisions == {first.pk: ("keep", []), second.pk: ("delete", ["wrong_answer"]), third.pk: ("keep", [])}
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (ItemStatus.REWRITE, ItemStatus.REJECTED)


def test_clue_fix_by_selection_updates_the_picture_the_badge_and_the_checks(live_server, browser_page, annotator):
    page = browser_page
    (graph_item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, start=10)
    _login(page, live_server, "ann1")

    # Clue 3 is not in the story as written; select its words in the context instead.
    page.goto(f"{live_server.url}/annotation/items/{graph_item.pk}/clue-graph/")
    node = page.locator("#graph-picture #node-c3")
    assert {"fuzzy", "unanchored"} & set(node.get_attribute("class").split())  # not verbatim: flagged
    assert page.inner_text("#clue-state-2") == page.inner_text("#anchor-2 .anchor-state") == "approximate"
    assert "No problems found" not in page.inner_text("#graph-issues")
    svg_before = page.inner_html("#graph-picture")
    page.click('#anchor-2 [data-pick-clue="2"]')
    page.evaluate("""() => {
        // Select the phrase as a user would: the range may span several highlighted text nodes.
        const ctx = document.getElementById('cg-context');
        const phrase = 'On a snowy winter night';
        const from = ctx.textContent.indexOf(phrase), to = from + phrase.length;
        if (from < 0) { throw new Error('phrase not found'); }
        const walker = document.createTreeWalker(ctx, NodeFilter.SHOW_TEXT);
        const range = document.createRange();
        let seen = 0, node;
        while ((node = walker.nextNode())) {
            const len = node.textContent.length;
            if (from >= seen && from <= seen + len) { range.setStart(node, from - seen); }
            if (to >= seen && to <= seen + len) { range.setEnd(node, to - seen); break; }
            seen += len;
        }
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
    }""")
    box = page.locator("#cg-context").bounding_box()
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    page.mouse.up()  # the mouseup ends the selection: the clue is replaced (htmx) and the picture redrawn
    page.wait_for_function(
        "() => { const n = document.querySelector('#graph-picture #node-c3');"
        " return n && n.classList.contains('anchored'); }")
    assert page.input_value("#clue-2 input[name=clue_text]") == "On a snowy winter night"
    assert page.inner_html("#graph-picture") != svg_before
    assert page.get_attribute("#anchor-2", "data-state") == "exact"
    assert page.inner_text("#clue-state-2") == "verbatim"

    # Typing a paraphrase: the preview and the row's badge say "approximate" together (no stale "exact").
    page.fill("#clue-0-text", "muddy boots were standing next to the desk")
    page.press("#clue-0-text", "Tab")  # leaving the field sends it (htmx "change")
    page.wait_for_function("() => document.querySelector('#anchor-0').dataset.state === 'fuzzy'")
    page.wait_for_function("() => document.querySelector('#clue-state-0').textContent.trim() === 'approximate'")
    assert "Clue only approximately in the context: clue 1" in page.inner_text("#graph-issues")
    page.fill("#clue-0-text", "muddy boots stood by the desk")
    page.press("#clue-0-text", "Tab")
    page.wait_for_function("() => document.querySelector('#clue-state-0').textContent.trim() === 'verbatim'")
    with page.expect_navigation():
        page.click("#save-graph")
    graph_item.refresh_from_db()
    assert "On a snowy winter night -> tracks would show" in graph_item.evidence
    assert graph_item.version == 2 and graph_item.revisions.last().author == annotator


def test_autosaves_carry_their_page_and_their_order_and_a_saved_rewrite_stays_saved(live_server, browser_page,
                                                                                    annotator):
    """The rewrite form's autosaves (htmx) carry the page's stamp and a count that grows with each request
    (workflow.js); after Save, the next page shows the saved text and no draft."""
    import re

    from annotation.models import Draft

    page = browser_page
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    _login(page, live_server, "ann1")
    sent: list[tuple[str, str]] = []
    page.on("request", lambda r: sent.append(
        (re.search(r"\bdraft_page=(\d+)", r.post_data or "").group(1),
         re.search(r"\bdraft_seq=(\d+)", r.post_data or "").group(1)))
        if r.method == "POST" and r.url.endswith("/rewrite/draft/") else None)
    page.goto(f"{live_server.url}/annotation/items/{item.pk}/rewrite/")
    stamp = page.locator("#rewrite-form input[name=draft_page]").get_attribute("value")
    for n, words in enumerate((" Who?", " Who came in?"), start=1):
        page.fill("#id_question", item.question + words)
        with page.expect_response(lambda r: r.url.endswith("/rewrite/draft/")):
            page.press("#id_question", "Tab")  # leaving the field sends it (htmx "change")
        page.wait_for_selector("#draft-status:has-text('Draft saved')")
        assert len(sent) == n
    assert [seq for _, seq in sent] == ["1", "2"], sent
    assert {page_stamp for page_stamp, _ in sent} == {stamp}
    draft = Draft.objects.get(item=item)
    assert (draft.page, draft.seq) == (int(stamp), len(sent))
    with page.expect_navigation():
        page.click("#rewrite-form button.primary")
    assert "Restored your unsaved draft" not in page.content()
    assert page.locator("#id_question").input_value() == item.question + " Who came in?"


def _until(page, expression: str, timeout_s: float = 10.0) -> None:
    """Wait until a JavaScript expression is true (evaluated, not compiled from a string: the pages' CSP has no
    'unsafe-eval', which wait_for_function needs for a string)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"not true within {timeout_s} s: {expression}"
        time.sleep(0.05)


def test_the_clue_graph_editor_keeps_the_keyboard_where_the_change_is(live_server, browser_page, annotator):
    """+ clue, + step and remove redraw the whole editor: the focus goes to the new row's first field, or to the
    row that took the removed one's place, never back to the top of the page; each remove button names its row."""
    page = browser_page
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, start=20)
    _login(page, live_server, "ann1")
    page.goto(f"{live_server.url}/annotation/items/{item.pk}/clue-graph/")
    clues = page.locator("#clue-rows > li").count()
    assert page.get_attribute("#clue-rows > li:first-child .row-head button", "aria-label") == "Remove clue 1"
    page.focus("#add-clue")
    with page.expect_response(lambda r: r.url.endswith("/clue-graph/edit/")):
        page.keyboard.press("Enter")
    _until(page, f"document.querySelectorAll('#clue-rows > li').length === {clues + 1}")
    _until(page, "document.activeElement && document.activeElement.name === 'clue_text'")
    assert page.evaluate("document.activeElement.id") == f"clue-{clues}-text"
    page.focus("#clue-rows > li:first-child .row-head button")
    with page.expect_response(lambda r: r.url.endswith("/clue-graph/edit/")):
        page.keyboard.press("Enter")
    _until(page, f"document.querySelectorAll('#clue-rows > li').length === {clues}")
    _until(page, "document.activeElement && document.activeElement.id === 'clue-0-text'")
    steps = page.locator("#step-rows > li").count()
    page.focus("#add-step")
    with page.expect_response(lambda r: r.url.endswith("/clue-graph/edit/")):
        page.keyboard.press("Enter")
    _until(page, f"document.querySelectorAll('#step-rows > li').length === {steps + 1}")
    _until(page, "document.activeElement && document.activeElement.closest('#step-rows > li:last-child')")


def test_text_typed_just_before_a_reload_comes_back_as_the_draft(live_server, browser_page, annotator):
    """The autosave waits for a pause in typing; text typed within it and a reload at once was lost. On leaving
    the page the form sends what it has (sendBeacon), and the reloaded page restores it."""
    import time

    from annotation.models import Draft

    page = browser_page
    (item,) = make_items(1, status=ItemStatus.REWRITE, start=30)
    _login(page, live_server, "ann1")
    url = f"{live_server.url}/annotation/items/{item.pk}/rewrite/"
    page.goto(url)
    page.fill("#id_question", item.question + " QUICK-TYPED.")  # an input event, no pause, no change event
    page.reload()
    deadline = time.monotonic() + 10
    while not Draft.objects.filter(item=item, data__question__endswith="QUICK-TYPED.").exists():
        assert time.monotonic() < deadline, "the text typed before the reload was not kept as a draft"
        time.sleep(0.1)
    page.goto(url)
    assert page.input_value("#id_question").endswith("QUICK-TYPED.")
    assert "Restored your unsaved draft" in page.inner_text("main")


def test_a_phone_wide_screen_keeps_long_words_and_wide_tables_inside_the_page(live_server, browser_page, annotator,
                                                                             researcher):
    from annotation.services import item_update

    page = browser_page
    page.set_viewport_size({"width": 375, "height": 800})
    (item,) = make_items(1, status=ItemStatus.REWRITE, start=40)
    item_update(item_id=item.pk, base_version=item.version, changes={"context": item.context + " " + "x" * 300})
    _login(page, live_server, "ann1")
    fits = "document.documentElement.scrollWidth <= window.innerWidth + 1"
    for path in (f"/annotation/items/{item.pk}/", f"/annotation/items/{item.pk}/history/"):
        page.goto(live_server.url + path)
        assert page.evaluate(fits), (path, page.evaluate("document.documentElement.scrollWidth"))
    page.context.clear_cookies()
    _login(page, live_server, "res1")
    for path in ("/evaluation/runs/", "/evaluation/leaderboard/?split=test", "/annotation/progress/"):
        page.goto(live_server.url + path)
        assert page.evaluate(fits), (path, page.evaluate("document.documentElement.scrollWidth"))
