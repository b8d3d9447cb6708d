"""Debian's chromium: an annotator reviews judge labels from the queue, one action (a click or a key) per label
(one accepted, one overridden, one blind), the researcher's trust page updates; the verification screen shows the judge's
screening suggestion with its belief."""
import pytest

from annotation.models import BeliefLabel, BeliefReview, ItemStatus, VerificationDecision
from annotation.services.belief import belief_labels_record, belief_queue_for
from tests.annotation.belief_support import record_free_text, screening_rows
from tests.annotation.workflow_support import make_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]  # browser_page: tests/e2e/conftest.py


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


def test_annotator_reviews_judge_labels_and_the_trust_page_updates(live_server, browser_page, annotator, researcher):
    queue = belief_queue_for(name="judge-e2e", order="audit", random_share=0.2, blind=False)
    items = make_items(3, status=ItemStatus.PUBLISHED, source="e2e")
    record_free_text(queue, items, [0.9, 0.35, 0.6], labels=["correct", "correct", "incorrect"])
    for target, key in (("result:0", 0.1), ("result:1", 0.2), ("result:2", 0.3)):  # the audit order
        BeliefLabel.objects.filter(queue=queue, target=target).update(audit_key=key)
    page = browser_page
    _login(page, live_server, "ann1")

    # 1. Accepted: the judge's label and belief are shown, the target by its item and question (not result:0);
    # accepting it is one action that opens the next label, saying what was answered.
    page.goto(f"{live_server.url}/")
    page.click("text=Review judge labels")
    page.click("#next-judge-e2e")
    assert page.inner_text("#judge-label-value") == "correct" and page.inner_text("#judge-belief") == "0.90"
    assert "free answer 0" in page.inner_text("#judged-answer")
    target = page.inner_text("#label-target")
    assert items[0].question in target and "result:" not in page.inner_text("main")
    assert "None" not in page.inner_text("#judge-label")  # the payload in words ("Closest option: 1. ...")
    assert "Closest option" in page.inner_text("#judge-label")
    # Accepting is no more preferred than any other answer (not the big green button).
    assert "keep" not in (page.get_attribute("#accept-judge", "class") or "")
    with page.expect_navigation():
        page.click("#accept-judge")
    assert "The judge said “correct” with belief 0.90: you agreed." in page.inner_text(".messages")

    # 2. Overridden: the other label, by its key; the next label opens at once.
    assert page.inner_text("#judge-belief") == "0.35"
    with page.expect_navigation():
        page.keyboard.press("2")  # 1 correct, 2 incorrect
    assert "you overrode it" in page.inner_text(".messages")
    assert page.inner_text("#judge-belief") == "0.60"

    # The researcher's trust page: two reviews, one agreeing.
    researcher_page = page.context.browser.new_context().new_page()
    _login(researcher_page, live_server, "res1")
    researcher_page.goto(f"{live_server.url}/annotation/belief/trust/")
    assert researcher_page.inner_text("#n-uniform") == "2"
    # Two reviews are counts, not an estimate: no accuracy until 10 labels, and a sentence saying so.
    assert researcher_page.inner_text("#plain-counts").startswith(
        "1 of 2 reviews agree with the judge; 2 of them in the uniform sample, 1 of which agree.")
    assert researcher_page.get_attribute("#accuracy-uniform", "data-value") == ""
    assert "8 more uniform review(s)" in researcher_page.inner_text("#missing-uniform")
    assert researcher_page.locator("#reliability svg").count() == 1
    # Blind review from now on.
    researcher_page.check("#id_blind")
    researcher_page.click("#policy-save")
    researcher_page.wait_for_load_state()

    # 3. Blind: nothing of the judge until the answer, then the reveal (the last label: back to the queues).
    page.reload()
    page.wait_for_selector("#blind-note")
    assert page.locator("#judge-label").count() == 0 and "0.60" not in page.inner_text("main")
    assert page.locator("#accept-judge").count() == 0
    with page.expect_navigation():
        page.click("#choose-incorrect")
    assert "The judge said “incorrect” with belief 0.60: you agreed." in page.inner_text(".messages")
    assert "No judge labels left for you in judge-e2e." in page.inner_text(".messages")

    # ann1 saw this label's judge (0.60) before the queue turned blind: the page hides it now, but the review is
    # not recorded blind (annotation.services.belief_sightings).
    reviews = list(BeliefReview.objects.order_by("pk").values_list("human_label", "agrees", "blind"))
    assert reviews == [("correct", True, False), ("incorrect", False, False), ("incorrect", True, False)]
    researcher_page.reload()
    assert researcher_page.inner_text("#n-uniform") == "3"
    assert researcher_page.inner_text("#plain-counts").startswith(
        "2 of 3 reviews agree with the judge; 3 of them in the uniform sample, 2 of which agree.")
    assert "7 more uniform review(s)" in researcher_page.inner_text("#missing-uniform")
    assert researcher_page.inner_text("#provenance-judge-overridden") == "judge-overridden: 1"
    researcher_page.context.close()


def test_verification_screen_shows_the_judges_suggestion_with_its_belief(live_server, browser_page, annotator):
    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source="e2e-v")
    verdicts = {"keep": ("keep", 0.92), "1.1": ("no", 0.97), "1.2": ("no", 0.88), "1.3": ("no", 0.7),
                "1.4": ("no", 0.81), "1.5": ("no", 0.99)}
    belief_labels_record(queue=belief_queue_for(name="screen-e2e", blind=False), rows=screening_rows(item, verdicts))
    page = browser_page
    _login(page, live_server, "ann1")
    page.goto(f"{live_server.url}/annotation/items/{item.pk}/verify/")
    assert page.inner_text("#judge-decision") == "keep"
    assert page.inner_text("#judge-decision-belief") == "0.92"
    assert "0.88" in page.inner_text("#judge-heavy_math")
    with page.expect_navigation():
        page.click("#accept-suggestion")
    # Auto-advance (on by default) moves on after a decision; the item's page then shows where it came from.
    page.goto(f"{live_server.url}/annotation/items/{item.pk}/verify/")
    assert "Judge accepted" in page.inner_text("#decision-source")
    decision = VerificationDecision.objects.get(item=item)
    assert (decision.decision, decision.source) == ("keep", "judge-accepted")
