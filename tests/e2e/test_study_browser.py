"""A participant completes a short study in Debian's chromium: mouse highlighting, htmx answers, reload resumes."""
import json
import re
import time

import pytest
from django.db import connections
from django.db.models import F
from django.utils import timezone

from annotation.models import Item
from studies.models import Attempt, AttemptStatus, ParticipantLease, Response, StudyStatus
from studies.services import study_create
from tests.studies.conftest import import_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser_page):
    """The shared browser page (tests/e2e/conftest.py); the test's own database connections closed before it goes.

    While Playwright's sync API runs, the ORM keeps this test's connections in Playwright's context: closed
    only after the browser is gone, they would stay open and keep the test database from being dropped.
    """
    yield browser_page
    connections.close_all()


def _select_by_mouse(page, to_x=0.6, to_y=0.25, from_x=None, from_y=None):
    """Press at the first character of the story (or at a fraction of it) and drag to a point further down.

    Waits until question.js has set up the story (an htmx swap runs it after the new question is in the page).
    """
    page.wait_for_selector("#question .kbd-caret", state="attached")
    # The story's first line below the sticky timer bar (which would otherwise take the press).
    page.evaluate("window.scrollTo(0, document.getElementById('context').getBoundingClientRect().top"
                  " + window.scrollY - 120)")
    box = page.locator("#context").bounding_box()
    if from_x is None:
        page.mouse.move(box["x"] + 18, box["y"] + 28)
    else:
        page.mouse.move(box["x"] + box["width"] * from_x, box["y"] + box["height"] * from_y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * to_x, box["y"] + box["height"] * to_y, steps=8)
    page.mouse.up()


def test_participant_completes_study_with_highlights_and_reload_resumes(live_server, detectbench_dir, page):
    ids = import_items(detectbench_dir, 4)
    study_create(slug="browser", item_ids=ids, per_participant=2, raters=1, time_limit_seconds=1800,
                         status=StudyStatus.OPEN, completion_code="BROWSER-OK", bonus_per_correct="1.00",
                         consent_text="Please agree.")
    # The first page also starts chromium's renderer: on a loaded machine that takes a while.
    page.goto(f"{live_server.url}/s/browser/?PROLIFIC_PID=pw-1&STUDY_ID=s&SESSION_ID=x", timeout=60000)
    page.check("input[name=consent]")
    page.click("button[type=submit]")
    page.wait_for_selector("#start")
    # The instructions are the answer to the consent itself; the address bar shows the attempt's address, and a
    # reload asks for that address (one GET: the consent is not sent again).
    attempt = Attempt.objects.get(external_participant_id="pw-1")
    assert page.url == f"{live_server.url}/s/a/{attempt.token}/"
    documents: list[tuple[str, str]] = []

    def document(request) -> None:
        if request.resource_type == "document":
            documents.append((request.method, request.url))

    page.on("request", document)
    page.reload()
    page.wait_for_selector("#start")
    page.remove_listener("request", document)
    assert documents == [("GET", f"{live_server.url}/s/a/{attempt.token}/")], documents
    page.click("#start")
    page.wait_for_selector("#question")
    # The first question is the answer to Start itself; the address bar shows the attempt's address, not Start's.
    assert page.url == f"{live_server.url}/s/a/{attempt.token}/"
    sent: list[tuple[str, str]] = []
    page.on("request", lambda request: sent.append((request.method, request.url)))

    # Highlight by mouse, remove it, highlight again.
    _select_by_mouse(page)
    page.wait_for_selector("#context mark.clue")
    assert page.locator("[data-highlight-list] li").count() == 1
    page.click(".remove-highlight")
    assert page.locator("#context mark.clue").count() == 0
    _select_by_mouse(page, 0.5, 0.2)
    marked = page.locator("#context mark.clue").inner_text()
    assert len(marked) > 3

    # Reload mid-way: same attempt, same server-owned remaining time, highlight draft kept.
    before = int(page.locator("[data-seconds-left]").get_attribute("data-seconds-left"))
    deadline = Attempt.objects.get(external_participant_id="pw-1").deadline
    reloaded_from = timezone.now()
    page.reload()
    page.wait_for_selector("#question")
    reloaded_by = timezone.now()
    # The reload asked for the attempt's page (a GET), it did not send Start again.
    assert ("GET", page.url) in sent and not [url for method, url in sent if url.endswith("/start/")], sent
    after = int(page.locator("[data-seconds-left]").get_attribute("data-seconds-left"))
    assert after <= before
    assert int((deadline - reloaded_by).total_seconds()) <= after <= int((deadline - reloaded_from).total_seconds())
    shown = page.locator("[data-seconds-left]").inner_text()
    assert re.match(r"\d+:\d\d", shown)
    # The highlight is drawn by the page's script (from the server's draft, or this tab's unsaved copy): wait for
    # it to have run, then count (a count at once raced the script on a loaded machine).
    page.wait_for_selector("#context mark.clue", timeout=10000)
    assert page.locator("#context mark.clue").count() == 1

    page.locator("input[name=chosen_option]").first.check()
    page.select_option("select[name=confidence]", "4")
    page.click("[data-submit]")
    page.wait_for_selector("text=Question 2 of 2")
    # The next question starts at its top, not mid-story: htmx scrolls (show:window:top) after the swap settles,
    # a moment after the new text is in the page, so wait for it (a page that never scrolls fails here).
    page.wait_for_function("() => window.scrollY === 0", timeout=5000)
    _select_by_mouse(page, 0.7, 0.3)
    page.locator("input[name=chosen_option]").nth(1).check()
    page.click("[data-submit]")
    page.wait_for_selector("#completion-code")
    assert page.locator("#completion-code").inner_text() == "BROWSER-OK"

    attempt = Attempt.objects.get(external_participant_id="pw-1")
    assert attempt.status == AttemptStatus.FINISHED and Attempt.objects.count() == 1
    responses = list(Response.objects.filter(attempt=attempt).select_related("item").order_by("answered_at"))
    assert len(responses) == 2 and responses[0].confidence == 4
    for r in responses:
        assert len(r.highlights) == 1
        h = r.highlights[0]
        assert r.item.context[h["start"]:h["end"]] == h["text"]
    assert responses[0].highlights[0]["text"] == marked.strip()


def _wait_for(condition, timeout: float = 5.0) -> None:
    """Poll a condition checked from the test (the CSP forbids page.wait_for_function's string evaluation)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout} s")
        time.sleep(0.05)


def _answer(page, option: int = 0) -> None:
    page.wait_for_selector("#question input[name=chosen_option]")
    page.locator("input[name=chosen_option]").nth(option).check()
    page.click("[data-submit]")


def test_back_and_a_stale_tab_never_leave_a_participant_stuck(live_server, detectbench_dir, page):
    """Back after answering, and a second tab left on an answered question: the answer is refused with a page
    that says so (one htmx-config per page, so the refusal is swapped in) and Continue leads on."""
    ids = import_items(detectbench_dir, 3)
    study_create(slug="back", item_ids=ids, per_participant=3, raters=1, time_limit_seconds=1800,
                 status=StudyStatus.OPEN, completion_code="BACK-OK", consent_text="Please agree.")
    page.goto(f"{live_server.url}/s/back/?PROLIFIC_PID=pw-back&STUDY_ID=s&SESSION_ID=x", timeout=60000)
    assert page.locator("meta[name=htmx-config]").count() == 1
    page.check("input[name=consent]")
    page.click("button[type=submit]")
    page.click("#start")
    _answer(page)
    page.wait_for_selector("text=Question 2 of 3")
    # The swap removed the focused Submit button: the focus is on the new question's heading, not the body.
    _wait_for(lambda: page.evaluate("document.activeElement && document.activeElement.id") == "question-heading", 3)
    assert page.locator("h1#question-heading").inner_text() == "Question 2 of 3"
    assert page.locator("fieldset.options legend").inner_text() == page.locator("p.question").inner_text()
    question_url = page.url

    page.go_back()
    page.wait_for_selector("#question")
    assert page.locator("meta[name=htmx-config]").count() == 1
    if page.locator("text=Question 1 of 3").count():  # the browser showed the answered question again
        _answer(page, 1)
        page.wait_for_selector("#question.refused")
        assert "already been answered" in page.locator("#question").inner_text()
        page.click("#question.refused a.button")
    page.wait_for_selector("text=Question 2 of 3")

    # A second tab on the same question; the first answers it; the second's answer is refused and leads on.
    other = page.context.new_page()
    other.goto(question_url)
    other.wait_for_selector("text=Question 2 of 3")
    _answer(page)
    page.wait_for_selector("text=Question 3 of 3")
    _answer(other, 1)
    other.wait_for_selector("#question.refused")
    assert "already been answered" in other.locator("#question").inner_text()
    other.click("#question.refused a.button")
    other.wait_for_selector("text=Question 3 of 3")
    other.close()
    assert Response.objects.filter(attempt__external_participant_id="pw-back").count() == 2


def test_highlights_made_in_one_tab_are_there_in_another_tab_and_another_browser(live_server, detectbench_dir, page):
    """The highlights are saved on the server as they are made: a second tab and a second browser that resumes
    the attempt show them, a tab that comes back into view takes the other tab's changes, and the answer
    carries them."""
    ids = import_items(detectbench_dir, 3)
    study_create(slug="drafts", item_ids=ids, per_participant=2, raters=1, time_limit_seconds=1800,
                 status=StudyStatus.OPEN, completion_code="DRAFTS-OK", consent_text="Please agree.")
    link = f"{live_server.url}/s/drafts/?PROLIFIC_PID=pw-draft&STUDY_ID=s&SESSION_ID=sess-1"
    page.goto(link, timeout=60000)
    page.check("input[name=consent]")
    page.click("button[type=submit]")
    page.click("#start")
    page.wait_for_selector("#question")
    _select_by_mouse(page, 0.5, 0.2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    first = page.locator("#context mark.clue").inner_text()

    # A second tab of the same browser.
    tab = page.context.new_page()
    tab.goto(page.url)
    tab.wait_for_selector("#context mark.clue")
    assert tab.locator("#context mark.clue").inner_text() == first

    # Another browser (no cookie) resuming from the platform's link with the same id and session.
    other_browser = page.context.browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        elsewhere = other_browser.new_page()
        elsewhere.goto(link)
        elsewhere.wait_for_selector("#context mark.clue")
        assert elsewhere.locator("#context mark.clue").inner_text() == first
        # A second clue there, further down the story.
        _select_by_mouse(elsewhere, 0.6, 0.8, from_x=0.2, from_y=0.7)
        _wait_for(lambda: elsewhere.locator("#context mark.clue").count() == 2)
        elsewhere.wait_for_selector("[data-draft-status][data-state=saved]")
        clues = elsewhere.locator("#context mark.clue").all_inner_texts()
    finally:
        other_browser.close()
    assert clues[0] == first and len(clues) == 2

    # The first tab comes back into view: it shows what was made elsewhere.
    tab.close()
    page.bring_to_front()
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    _wait_for(lambda: page.locator("#context mark.clue").all_inner_texts() == clues)

    page.locator("input[name=chosen_option]").first.check()
    page.click("[data-submit]")
    page.wait_for_selector("text=Question 2 of 2")
    response = Response.objects.get(attempt__external_participant_id="pw-draft")
    assert [h["text"] for h in response.highlights] == clues


def test_a_researcher_previews_the_study_and_nothing_is_recorded(live_server, detectbench_dir, page, researcher):
    """The monitor's "Preview as a participant": consent, instructions, questions with highlighting, the end page
    with the code to copy and the way back to Prolific; no attempt, lease or answer is written."""
    ids = import_items(detectbench_dir, 4)
    study = study_create(slug="preview", item_ids=ids, per_participant=2, raters=1, time_limit_seconds=1800,
                         status=StudyStatus.OPEN, completion_code="PREVIEW-OK", consent_text="Please agree.")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    _researcher_on_the_monitor(page, live_server, study.slug)
    page.click("#preview-link")
    assert "nothing is recorded" in page.locator("#preview-banner").inner_text()
    page.check("input[name=consent]")
    page.click("#consent button[type=submit]")
    page.click("#start")
    page.wait_for_selector("text=Question 1 of 2")
    _select_by_mouse(page, 0.5, 0.2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    clue = page.locator("#context mark.clue").inner_text()
    page.reload()  # the preview's draft comes back like a participant's
    page.wait_for_selector("#context mark.clue")
    assert page.locator("#context mark.clue").inner_text() == clue
    _answer(page)
    page.wait_for_selector("text=Question 2 of 2")
    _answer(page, 1)
    page.wait_for_selector("#completion-code")
    assert page.locator("#completion-code").inner_text() == "PREVIEW-OK"
    page.click("[data-copy=completion-code]")
    _wait_for(lambda: page.locator("[data-copy-status]").inner_text() == "Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == "PREVIEW-OK"
    link = page.locator("#return-link")
    assert link.inner_text() == "Return to Prolific"
    assert link.get_attribute("href") == "https://app.prolific.com/submissions/complete?cc=PREVIEW-OK"
    assert not Attempt.objects.exists() and not Response.objects.exists()
    assert set(study.pool.values_list("load", flat=True)) == {0}


def _researcher_on_the_monitor(page, live_server, slug: str) -> None:
    """The researcher (tests/conftest.py's res1) logs in and opens the study's monitor."""
    page.goto(f"{live_server.url}/accounts/login/", timeout=60000)
    page.fill("input[name=username]", "res1")
    page.fill("input[name=password]", "pw-res1")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/studies/{slug}/")


def _join_and_start(page, live_server, slug: str, pid: str) -> None:
    """A participant opens the study's link, consents and presses Start: on the first question."""
    page.goto(f"{live_server.url}/s/{slug}/?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID=x", timeout=60000)
    page.check("input[name=consent]")
    page.click("button[type=submit]")
    page.click("#start")
    page.wait_for_selector("#question")


def _start_draft_study(live_server, detectbench_dir, page, slug: str):
    """A participant on the first question of a new study; (the draft's address, the position, the CSRF token, the
    question's lease)."""
    ids = import_items(detectbench_dir, 3)
    study_create(slug=slug, item_ids=ids, per_participant=2, raters=1, time_limit_seconds=1800,
                 status=StudyStatus.OPEN, completion_code="OK", consent_text="Please agree.")
    _join_and_start(page, live_server, slug, f"pw-{slug}")
    box = page.locator("[data-draft-url]")
    url, position = live_server.url + box.get_attribute("data-draft-url"), box.get_attribute("data-position")
    csrf = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    lease = Attempt.objects.get(external_participant_id=f"pw-{slug}").leases.get(position=int(position))
    return url, position, csrf, lease


def _post_draft(page, url: str, position: str, csrf: str, highlights: str, revision: str):
    """A draft save with this browser's cookies, as a request of its pages (another tab's, or one arriving late)."""
    return page.request.post(url, form={"position": position, "highlights": highlights, "revision": revision,
                                        "csrfmiddlewaretoken": csrf}, headers={"Referer": page.url})


def _save_elsewhere(page, url: str, position: str, csrf: str, lease) -> list[dict]:
    """Another tab of the participant saves a draft (revision 0 -> 1): the first long word of the story."""
    words = re.search(r"[A-Za-z]{6,}", lease.item.context)
    elsewhere = [{"start": words.start(), "end": words.end(), "text": words.group(0)}]
    assert _post_draft(page, url, position, csrf, json.dumps(elsewhere), "0").status == 200
    return elsewhere


HIDE = "Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'})"


def test_a_save_arriving_late_never_undoes_the_highlights_the_page_shows(live_server, detectbench_dir, page):
    """Each draft save names the revision it replaces. A save from before a reload that reaches the server late is
    refused and the page keeps its highlight; when another save came first, the page's own newer highlights are
    sent again on top of it, and the server ends with exactly what the page shows."""
    url, position, csrf, lease = _start_draft_study(live_server, detectbench_dir, page, "late")
    _select_by_mouse(page, 0.5, 0.2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    first = page.locator("#context mark.clue").inner_text()
    page.reload()
    page.wait_for_selector("#context mark.clue")
    assert page.locator("[data-draft-url]").get_attribute("data-draft-revision") == "1"

    def save(highlights: str, revision: str):
        return _post_draft(page, url, position, csrf, highlights, revision)

    # The old page's "remove everything", sent before the reload (revision 0), arrives now: refused.
    late = save("[]", "0")
    assert late.status == 412 and late.json()["revision"] == 1
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # the page reads the server's draft again
    time.sleep(0.5)
    assert page.locator("#context mark.clue").all_inner_texts() == [first]

    # Another tab empties the draft (revision 1 -> 2) without this page knowing; the participant highlights here.
    assert save("[]", "1").status == 200
    # What the page sends: its revision (1), refused as another save came first, then again on top of it (2).
    exchanges: list = []
    page.on("response", lambda r: exchanges.append((re.search(r'name="revision"\s+(\d+)', r.request.post_data or "").group(1),
                                                    r.status))
            if r.request.method == "POST" and r.url == url else None)
    # Every state the draft's status line goes through (the refusal is not a lost connection: never "unsaved").
    page.evaluate("""() => { const line = document.querySelector('[data-draft-status]'); window.draftStates = [];
        new MutationObserver(() => window.draftStates.push(line.getAttribute('data-state')))
            .observe(line, {attributes: true, attributeFilter: ['data-state']}); }""")
    _select_by_mouse(page, 0.6, 0.8, from_x=0.2, from_y=0.7)
    _wait_for(lambda: page.locator("#context mark.clue").count() == 2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    assert page.evaluate("window.draftStates") == ["saving", "saved"]
    assert exchanges == [("1", 412), ("2", 200)], exchanges
    shown = page.locator("#context mark.clue").all_inner_texts()
    lease.refresh_from_db()
    assert [h["text"] for h in lease.draft_highlights] == shown and lease.draft_revision == 3
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    time.sleep(0.5)
    assert page.locator("#context mark.clue").all_inner_texts() == shown


def test_a_read_of_the_draft_overtaken_by_a_save_does_not_take_the_page_back(live_server, detectbench_dir, page):
    """The tab comes back into view and reads the server's draft; the participant highlights before the read's
    answer arrives, and that save is answered first. The late answer is older than what the page shows: ignored."""
    _, _, _, lease = _start_draft_study(live_server, detectbench_dir, page, "overtaken")
    _select_by_mouse(page, 0.5, 0.2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    held: list = []

    def hold(route):  # the read's answer as the server gives it now, handed to the page later
        held.append((route, route.fetch()))

    page.route(re.compile(r".*/draft/\?position=.*"), hold)
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    for _ in range(100):  # the route handler runs while Playwright's calls run: wait through one
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    _select_by_mouse(page, 0.6, 0.8, from_x=0.2, from_y=0.7)
    _wait_for(lambda: page.locator("#context mark.clue").count() == 2)
    _wait_for(lambda: ParticipantLease.objects.get(pk=lease.pk).draft_revision == 2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    route, answer = held[0]
    assert answer.json()["revision"] == 1 and len(answer.json()["highlights"]) == 1
    route.fulfill(response=answer)
    time.sleep(0.5)
    assert page.locator("#context mark.clue").count() == 2


def test_a_retry_in_a_tab_out_of_view_takes_the_newer_draft_instead_of_overwriting_it(live_server,
                                                                                      detectbench_dir, page):
    """A save failed (no connection); the participant went on in another tab, which saved first; this tab, out of
    view, tries its old save again: refused, it shows the newer draft and sends nothing more."""
    url, position, csrf, lease = _start_draft_study(live_server, detectbench_dir, page, "hidden")
    failed: list = []
    page.route(url, lambda route: (failed.append(1), route.abort()) if not failed else route.continue_())
    statuses: list = []
    page.on("response", lambda r: statuses.append(r.status) if r.request.method == "POST" and r.url == url else None)
    _select_by_mouse(page, 0.6, 0.8, from_x=0.2, from_y=0.7)
    page.wait_for_selector("[data-draft-status][data-state=unsaved]")  # retried in 2 s
    elsewhere = _save_elsewhere(page, url, position, csrf, lease)
    page.evaluate(HIDE)
    _wait_for(lambda: page.locator("#context mark.clue").all_inner_texts() == [elsewhere[0]["text"]], timeout=10)
    page.wait_for_timeout(500)
    assert failed == [1] and statuses == [412]
    lease.refresh_from_db()
    assert lease.draft_highlights == elsewhere and lease.draft_revision == 1


def test_a_change_made_in_view_is_sent_again_though_the_tab_is_hidden_when_its_refusal_arrives(
        live_server, detectbench_dir, page):
    """The participant highlights and leaves the tab before the answer to that save comes back (a 412: another save
    came first). The change was made in view, so it is the newest: it is sent again on top, not dropped."""
    url, position, csrf, lease = _start_draft_study(live_server, detectbench_dir, page, "leaving")
    elsewhere = _save_elsewhere(page, url, position, csrf, lease)
    held: list = []
    page.route(url, lambda route: held.append(route) if not held else route.continue_())
    exchanges: list = []
    page.on("response", lambda r: exchanges.append(r.status) if r.request.method == "POST" and r.url == url else None)
    _select_by_mouse(page, 0.6, 0.8, from_x=0.2, from_y=0.7)
    for _ in range(100):  # the route handler runs while Playwright's calls run
        if held:
            break
        page.wait_for_timeout(50)
    shown = page.locator("#context mark.clue").all_inner_texts()
    page.evaluate(HIDE)
    held[0].continue_()
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    assert exchanges == [412, 200]
    assert page.locator("#context mark.clue").all_inner_texts() == shown
    lease.refresh_from_db()
    assert [h["text"] for h in lease.draft_highlights] == shown != [elsewhere[0]["text"]]
    assert lease.draft_revision == 2


def test_a_refusal_without_a_usable_revision_is_tried_again_later_not_in_a_loop(live_server, detectbench_dir, page):
    """A 412 whose body names no revision (a proxy's page, not the server's answer): the page says the highlights
    are not saved yet and tries again after its pause, once, instead of sending again at once."""
    url, position, csrf, lease = _start_draft_study(live_server, detectbench_dir, page, "noproof")
    answered: list = []
    page.route(url, lambda route: (answered.append(412), route.fulfill(status=412, body="{}",
                                                                       content_type="application/json"))
               if not answered else (answered.append(200), route.continue_()))
    _select_by_mouse(page, 0.6, 0.8, from_x=0.2, from_y=0.7)
    page.wait_for_selector("[data-draft-status][data-state=unsaved]")
    page.wait_for_timeout(500)
    assert answered == [412]  # not sent again at once
    page.wait_for_selector("[data-draft-status][data-state=saved]", timeout=10000)  # the retry, 2 s later
    assert answered == [412, 200]
    lease.refresh_from_db()
    assert [h["text"] for h in lease.draft_highlights] == page.locator("#context mark.clue").all_inner_texts()


def test_a_reloaded_page_read_before_the_last_save_was_stored_reads_the_draft_again(live_server, detectbench_dir,
                                                                                    page):
    """A reload while a save is on its way: the server can read the draft for the new page just before that save is
    stored, and the save's answer (reaching the old page first) clears the tab's unsaved copy. The page shown is
    then older than the server's draft; it reads the draft once more when it opens and shows the stored one."""
    _, _, _, lease = _start_draft_study(live_server, detectbench_dir, page, "reread")
    _select_by_mouse(page, 0.5, 0.2)
    page.wait_for_selector("[data-draft-status][data-state=saved]")
    before = page.locator("#context mark.clue").all_inner_texts()
    last = list(re.finditer(r"[A-Za-z]{6,}", lease.item.context))[-1]
    stored = [{"start": last.start(), "end": last.end(), "text": last.group(0)}]

    def stale_page(route):  # the page as the server read it; the save on its way is stored just after that
        if route.request.resource_type != "document":
            route.continue_()
            return
        response = route.fetch()
        ParticipantLease.objects.filter(pk=lease.pk).update(draft_highlights=stored,
                                                            draft_revision=F("draft_revision") + 1)
        route.fulfill(response=response)

    page.route(f"{live_server.url}/s/a/**", stale_page)
    page.reload()
    page.wait_for_selector("#question")
    page.unroute(f"{live_server.url}/s/a/**")
    assert page.locator("[data-draft-url]").get_attribute("data-draft-revision") == "1"  # the page as read
    _wait_for(lambda: page.locator("#context mark.clue").all_inner_texts() == [last.group(0)])
    assert before != [last.group(0)]


def test_a_clue_after_a_line_break_and_characters_outside_the_bmp_is_stored_where_the_participant_put_it(
        live_server, detectbench_dir, page):
    """A story rewritten in a textarea (CRLF) with characters outside the BMP before the clue (an emoji, a CJK
    Extension B character: two UTF-16 units each, one code point): the page counts units, the server code points.
    The clue is accepted as a draft, drawn again from the server's draft after a reload, and answered: stored with
    code-point offsets into the story as shown."""
    from annotation.services.items import item_update

    ids = import_items(detectbench_dir, 2)
    story = "First line 😀 of the story 𠀀.\r\n\r\nSecond paragraph: the butler 🎩 was in the garden."
    for pk in ids:
        item = Item.objects.get(pk=pk)
        item_update(item_id=pk, base_version=item.version, changes={"context": story})
    study_create(slug="astral", item_ids=ids, per_participant=1, raters=1, time_limit_seconds=1800,
                 status=StudyStatus.OPEN, completion_code="ASTRAL-OK")
    page.goto(f"{live_server.url}/s/astral/?PROLIFIC_PID=pw-astral&STUDY_ID=s&SESSION_ID=x", timeout=60000)
    page.check("input[name=consent]")
    page.click("button[type=submit]")
    page.click("#start")
    page.wait_for_selector("#question .kbd-caret", state="attached")
    shown = page.evaluate("document.getElementById('context').textContent")
    assert "\r" not in shown and "garden" in shown
    start = len(shown[:shown.index("garden")].encode("utf-16-le")) // 2  # the word's offset in UTF-16 units
    page.evaluate("""([start, end]) => {
        const node = document.getElementById('context').firstChild;
        window.getSelection().setBaseAndExtent(node, start, node, end);
    }""", [start, start + 6])
    page.wait_for_selector("[data-add-selection]:not([disabled])")
    page.click("[data-add-selection]")
    page.wait_for_selector("#context mark.clue")
    assert page.locator("#context mark.clue").inner_text() == "garden"
    lease = ParticipantLease.objects.get(attempt__external_participant_id="pw-astral")
    _wait_for(lambda: ParticipantLease.objects.get(pk=lease.pk).draft_highlights != [])
    expected = story.replace("\r\n", "\n").index("garden")
    assert ParticipantLease.objects.get(pk=lease.pk).draft_highlights == [
        {"start": expected, "end": expected + 6, "text": "garden"}]
    page.reload()  # drawn from the server's draft (code points) at the same place
    page.wait_for_selector("#context mark.clue")
    assert page.locator("#context mark.clue").inner_text() == "garden"
    _answer(page)
    page.wait_for_selector("#completion-code")
    response = Response.objects.get(attempt__external_participant_id="pw-astral")
    assert response.highlights == [{"start": expected, "end": expected + 6, "text": "garden"}]


def test_an_answer_on_its_way_cannot_be_sent_twice_nor_change_its_highlights(live_server, detectbench_dir, page):
    """On a slow network (1.5 s latency): while the answer is on its way the button is disabled and says so, a
    second press sends nothing (it used to be queued and stored as a refused answer the participant never gave),
    and a highlight made meanwhile is not drawn (the answer carries the highlights it had)."""
    from studies.models import RefusedAnswer

    ids = import_items(detectbench_dir, 2)
    study_create(slug="slow", item_ids=ids, per_participant=1, raters=1, time_limit_seconds=1800,
                 status=StudyStatus.OPEN, completion_code="SLOW-OK", consent_text="Please agree.")
    _join_and_start(page, live_server, "slow", "pw-slow")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 1500, "downloadThroughput": -1,
                                                  "uploadThroughput": -1})
    page.locator("input[name=chosen_option]").nth(0).check()
    page.click("[data-submit]")
    _wait_for(lambda: page.locator("[data-submit]").is_disabled(), 3)
    assert page.locator(".sending").is_visible()
    page.locator("input[name=chosen_option]").nth(1).check(force=True)
    page.locator("[data-submit]").click(force=True)  # a second press while the first is on its way
    marks = page.locator("#context mark").count()
    _select_by_mouse(page)
    page.evaluate("document.querySelector('[data-add-selection]') && document.querySelector('[data-add-selection]').click()")
    assert page.locator("#context mark").count() == marks  # nothing drawn while the answer is on its way
    page.wait_for_selector("text=SLOW-OK", timeout=20000)
    time.sleep(2)  # a queued second answer would arrive after the first one's 1.5 s
    responses = list(Response.objects.filter(attempt__external_participant_id="pw-slow").values_list(
        "chosen_option", flat=True))
    assert responses == [0]
    assert not RefusedAnswer.objects.filter(attempt__external_participant_id="pw-slow").exists()


def test_the_monitor_refresh_waits_while_a_researcher_uses_its_buttons(live_server, detectbench_dir, page,
                                                                          researcher):
    """The live part of the monitor refreshes every 5 s; with the keyboard focus on "+10 min" it waits (the focus
    used to fall to the page's body at every refresh), and Expire asks before it ends an attempt."""
    ids = import_items(detectbench_dir, 4)
    study = study_create(slug="monitor", item_ids=ids, per_participant=2, raters=1, time_limit_seconds=1800,
                         status=StudyStatus.OPEN, completion_code="MON-OK", consent_text="Please agree.")
    participant = page.context.browser.new_context().new_page()
    _join_and_start(participant, live_server, "monitor", "pw-mon")
    _researcher_on_the_monitor(page, live_server, study.slug)
    page.locator("#live button", has_text="+10 min").focus()
    time.sleep(6.5)  # more than one refresh period
    assert page.evaluate("document.activeElement && document.activeElement.textContent") == "+10 min"
    asked = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#live button", has_text="Expire").click()
    _wait_for(lambda: asked, 3)
    assert "End the attempt of pw-mon now?" in asked[0]
    assert Attempt.objects.get(external_participant_id="pw-mon").status == AttemptStatus.STARTED  # dismissed


def test_the_language_switch_asks_first_when_the_question_has_highlights(live_server, detectbench_dir, page):
    """Highlights belong to the story in one language: with some on the page the switch asks first (it used to
    drop them from view without a word), and declining keeps the page as it is."""
    from tests.studies.views.test_participant_pages import ZH

    ids = import_items(detectbench_dir, 3)
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": ZH})
    study_create(slug="langs", item_ids=ids, per_participant=2, raters=1, time_limit_seconds=1800,
                 status=StudyStatus.OPEN, completion_code="LANG-OK", consent_text="Please agree.", language="",
                 extra_languages=["zh-hans"])
    _join_and_start(page, live_server, "langs", "pw-lang")
    switch = page.locator("#language-switch form button:not([disabled])")
    assert page.locator("#language-switch form").get_attribute("data-confirm") is None  # nothing to lose yet
    _select_by_mouse(page)
    _wait_for(lambda: page.locator("#context mark").count() > 0, 5)
    asked = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    switch.first.click()
    _wait_for(lambda: asked, 3)
    assert "in the other language this question starts without them" in asked[0]
    assert page.locator("#context mark").count() > 0 and ZH["context"] not in page.content()
