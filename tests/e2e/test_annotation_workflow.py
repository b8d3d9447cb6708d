"""Real browser (Debian's chromium): verification with keyboard shortcuts, clue fix by selecting text,
the SVG picture of the clue graph updating after the edit."""
from __future__ import annotations

import os
import shutil

import pytest

from annotation.models import ItemStatus, Stage, VerificationDecision
from tests.annotation.workflow_support import make_items, set_k

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM), reason="chromium not installed"),
]


@pytest.fixture
def browser_page():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-sync"])
        page = browser.new_page()
        page.set_default_timeout(10_000)
        yield page
        browser.close()


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


def test_annotator_verifies_with_keys_fixes_a_clue_by_selection_and_the_graph_updates(
        live_server, browser_page, annotator):
    page = browser_page
    set_k(Stage.VERIFICATION, 1)
    first, second = make_items(2)
    (graph_item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, start=10)
    _login(page, live_server, "ann1")

    # Verification with the keyboard only.
    page.goto(f"{live_server.url}/annotation/queue/")
    page.click("#stage-verification button[type=submit]")
    page.wait_for_url(f"**/annotation/items/{first.pk}/verify/")
    page.keyboard.press("2")
    assert page.is_checked("#crit-heavy_math")
    page.keyboard.press("2")
    assert not page.is_checked("#crit-heavy_math")
    with page.expect_navigation():
        page.keyboard.press("k")
    assert "Saved: keep" in page.content()
    with page.expect_navigation():
        page.keyboard.press("n")
    assert page.url.endswith(f"/annotation/items/{second.pk}/verify/")
    page.keyboard.press("4")
    with page.expect_navigation():
        page.keyboard.press("d")
    decisions = {d.item_id: (d.decision, d.criteria) for d in VerificationDecision.objects.all()}
    assert decisions == {first.pk: ("keep", []), second.pk: ("delete", ["wrong_answer"])}
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (ItemStatus.REWRITE, ItemStatus.REJECTED)

    # Clue graph: clue 3 is not in the story; select its words in the context instead.
    page.goto(f"{live_server.url}/annotation/items/{graph_item.pk}/clue-graph/")
    node = page.locator("#graph-picture #node-c3")
    assert {"fuzzy", "unanchored"} & set(node.get_attribute("class").split())  # not verbatim: flagged
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
    with page.expect_navigation():
        page.click("#save-graph")
    graph_item.refresh_from_db()
    assert "On a snowy winter night -> tracks would show" in graph_item.evidence
    assert graph_item.version == 2 and graph_item.revisions.last().author == annotator
