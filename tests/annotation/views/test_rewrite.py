"""Question rewriting (annotation.views.rewrite): conflicts, drafts, checks, validation, edits only in the stage."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.forms import MAX_OPTIONS, MAX_QUESTION
from annotation.models import Draft, ItemRevision, ItemStatus, Stage
from annotation.services import lease_next
from tests.support.page_text import visible_text

from ..workflow_support import api_for, client_for, graph_post, make_items, rewrite_post, set_k

pytestmark = pytest.mark.django_db


def test_two_editors_second_save_is_refused_with_the_conflict_and_nothing_is_lost(annotator, annotator2):
    set_k(Stage.REWRITE, 2)  # two rewriters: each holds a slot of the stage
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    first, second = client_for(annotator), client_for(annotator2)
    url = reverse("annotation:rewrite", args=[item.pk])
    base = item.version
    assert first.get(url).status_code == 200 and second.get(url).status_code == 200
    r1 = first.post(url, rewrite_post(item, base, question="Who really entered the study?"))
    assert r1.status_code == 302
    r2 = second.post(url, rewrite_post(item, base, question="Who came into the locked study?"))
    assert r2.status_code == 302 and r2["Location"] == f"{url}?conflict={base}"  # post/redirect/get
    page = second.get(r2["Location"]).content.decode()
    assert "someone else changed this item" in page and "ann1" in page
    assert "<ins> really</ins>" in page  # the other person's change, as a diff
    assert "Who came into the locked study?" in page  # the refused text is still in the form
    draft = Draft.objects.get(user=annotator2, item=item, stage=Stage.REWRITE)
    assert draft.data["question"] == "Who came into the locked study?" and draft.base_version == base
    item.refresh_from_db()
    assert item.question == "Who really entered the study?"
    # After looking at the conflict the second editor saves on top of the new version.
    assert f'name="base_version" value="{item.version}"' in page
    r3 = second.post(url, rewrite_post(item, item.version, question="Who came into the locked study?"))
    assert r3.status_code == 302
    authors = list(ItemRevision.objects.filter(item=item).order_by("number").values_list("author__username", flat=True))
    assert authors[-2:] == ["ann1", "ann2"]
    assert not Draft.objects.filter(user=annotator2, item=item, data__isnull=False).exists()


def test_rewrite_checks_options_and_shows_previous_diff(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    bad = annotator_client.post(url, rewrite_post(item, item.version, option_2="The gardener"))
    assert bad.status_code == 302
    text = visible_text(annotator_client.get(bad["Location"]))
    assert "Not saved: options 1 and 3 are the same" in text
    ok = annotator_client.post(url, rewrite_post(item, item.version, option_3="Nobody at all"))
    assert ok.status_code == 302
    page = annotator_client.get(url).content.decode()
    assert "at all</ins>" in page


def test_the_checks_panel_reads_the_text_in_the_form_like_the_save(annotator_client, annotator):
    """A refused save: the page's checks say what the refusal said (not "distinct" in green); the same after
    a reload, which is a GET (post/redirect/get) and re-posts nothing."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    assert "One correct option; options are distinct." in visible_text(annotator_client.get(url))
    refused = annotator_client.post(url, rewrite_post(item, item.version, option_1="the  GARDENER"))
    for _ in range(2):  # the page, then a reload of it
        page = annotator_client.get(refused["Location"])
        text = visible_text(page)
        assert "Checks of the text in the form Options 1 and 2 are the same" in text
        assert "options are distinct" not in text
        assert ">the  GARDENER</textarea>" in page.content.decode()  # the refused text is back (kept as a draft)
    item.refresh_from_db()
    assert item.version == 1 and item.options[1] == "The butler"
    assert Draft.objects.get(user=annotator, item=item).data["options"][1] == "the  GARDENER"
    # While typing, the autosave answers with the checks of the typed text (swapped into the panel).
    typed = annotator_client.post(reverse("annotation:rewrite_draft", args=[item.pk]),
                                  rewrite_post(item, item.version, option_3=""), HTTP_HX_REQUEST="true")
    html = typed.content.decode()
    assert 'id="rewrite-checks" hx-swap-oob="true"' in html and "Option 4 is empty" in visible_text(html)


def test_the_options_are_wide_text_areas_that_show_the_whole_text(annotator_client):
    long_option = "The gardener, who had a key to the study and came in from the muddy garden at night " * 3
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    item.options = [long_option.strip(), *item.options[1:]]
    item.save(update_fields=["options"])
    html = annotator_client.get(reverse("annotation:rewrite", args=[item.pk])).content.decode()
    assert f'rows="2" maxlength="2000" aria-label="Text of option 1">{long_option.strip()}</textarea>' in html
    assert 'name="option_0" size=' not in html and 'type="text" name="option_' not in html


def test_rewrite_draft_autosaves_and_is_restored(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    response = annotator_client.post(reverse("annotation:rewrite_draft", args=[item.pk]),
                                     rewrite_post(item, item.version, question="Half-typed question"),
                                     HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert "Draft saved" in response.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["question"] == "Half-typed question"
    page = annotator_client.get(reverse("annotation:rewrite", args=[item.pk])).content.decode()
    assert "Restored your unsaved draft" in page and "Half-typed question" in page


def test_rewrite_refuses_missing_and_oversized_fields_by_name(annotator_client):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite", args=[item.pk])
    missing = annotator_client.post(url, rewrite_post(item, item.version, question=""))
    assert missing.status_code == 302
    assert "Not saved: Question: This field is required." in visible_text(annotator_client.get(missing["Location"]))
    huge = annotator_client.post(url, rewrite_post(item, item.version, question="x" * (MAX_QUESTION + 1)))
    assert huge.status_code == 400 and f"Question: Ensure this value has at most {MAX_QUESTION}" in huge.content.decode()
    bad = annotator_client.post(url, rewrite_post(item, "abc", answer_index=9))
    page = bad.content.decode()
    assert bad.status_code == 400 and "Base version:" in page and "Correct option:" in page
    no_choice = annotator_client.post(url, rewrite_post(item, item.version, answer_index=9))
    text = visible_text(annotator_client.get(no_choice["Location"]))
    assert "Not saved: Correct option: Select a valid choice." in text
    assert "Choose exactly one correct option" in text  # the restored form has no choice: its checks say so
    item.refresh_from_db()
    assert item.version == 1


def test_rewrite_draft_keeps_unfinished_text_but_refuses_oversized_input(annotator_client, annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url = reverse("annotation:rewrite_draft", args=[item.pk])
    odd = annotator_client.post(url, rewrite_post(item, item.version, answer_index="x", question=""))
    assert odd.status_code == 200
    assert Draft.objects.get(user=annotator, item=item).data["answer_index"] == item.answer_index
    huge = annotator_client.post(url, rewrite_post(item, item.version, question="y" * (MAX_QUESTION + 1)))
    assert huge.status_code == 422 and "Question: Ensure this value has at most" in huge.content.decode()
    many = annotator_client.post(url, rewrite_post(item, item.version, **{f"option_{i}": f"o{i}" for i in range(MAX_OPTIONS + 2)}))
    assert many.status_code == 422 and f"Options: at most {MAX_OPTIONS}" in many.content.decode()
    assert Draft.objects.get(user=annotator, item=item).data["question"] == ""  # the refused input was not stored


def test_edits_only_in_the_items_stage(annotator, annotator_client):
    (published,) = make_items(1, status=ItemStatus.PUBLISHED)
    response = annotator_client.post(reverse("annotation:rewrite", args=[published.pk]),
                                     rewrite_post(published, published.version, question="Sneaky change?"))
    assert response.status_code == 302
    assert "cannot be edited here now" in visible_text(annotator_client.get(response["Location"]))
    graph = annotator_client.post(reverse("annotation:clue_graph", args=[published.pk]), graph_post(published))
    assert graph.status_code == 302  # refused, kept as a draft, shown again by GET
    assert "cannot be edited here now" in visible_text(annotator_client.get(graph["Location"]))
    api = api_for(annotator).post(f"/api/annotation/items/{published.pk}/clue-graph/", {
        "base_version": published.version, "clues": [{"text": "a", "implication": "b"}],
        "steps": [{"inputs": ["b"], "output": "The gardener"}]}, format="json")
    assert api.status_code == 409
    published.refresh_from_db()
    assert published.version == 1 and published.question.startswith("Who entered")


def test_save_and_finish_is_all_or_nothing(annotator, annotator2):
    set_k(Stage.REWRITE, 1)
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    lease_next(user=annotator2, stage=Stage.REWRITE)  # the only slot is held by someone else
    editor = client_for(annotator)
    response = editor.post(reverse("annotation:rewrite", args=[item.pk]),
                           rewrite_post(item, item.version, question="Edited and finished?", finish="1"))
    assert response.status_code == 302 and "Not saved:" in visible_text(editor.get(response["Location"]))
    item.refresh_from_db()
    assert item.version == 1 and item.status == ItemStatus.REWRITE  # the edit was not saved without the finish


def test_the_rewrite_page_shows_the_rules_it_cites(annotator_client):
    """"Rules 2.1–2.4" is a link to the rules themselves, in the paper's words (Table 7) and what they ask here."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    page = annotator_client.get(reverse("annotation:rewrite", args=[item.pk]))
    text = visible_text(page.content.decode())
    assert "(rules 2.1–2.4)" in text and 'href="#stage-rules"' in page.content.decode()
    for number, words in (("2.1", "Standardize the expression."), ("2.2", "Rewrite a decent answer to the question."),
                          ("2.3", "Separate “Question” and “Context”."),
                          ("2.4", "Write decent and confusing “Options” of the question.")):
        assert f"{number} {words}" in text
    assert "exactly one correct" in text


def _page_stamp(html: str) -> int:
    return int(re.search(r'name="draft_page" value="(\d+)"', html).group(1))


def test_an_autosave_arriving_after_save_or_after_a_newer_page_is_not_kept(annotator_client, annotator):
    """Autosaves arrive in any order: one sent before Save (or before a reload) that reaches the server after it
    does not bring the old text back as a draft, and the page that sent it is told its text was not kept."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url, draft_url = reverse("annotation:rewrite", args=[item.pk]), reverse("annotation:rewrite_draft", args=[item.pk])
    shown = _page_stamp(annotator_client.get(url).content.decode())

    def autosave(page: int, seq: int, question: str):
        return annotator_client.post(draft_url, {**rewrite_post(item, item.version, question=question),
                                                 "draft_page": page, "draft_seq": seq}, HTTP_HX_REQUEST="true")

    assert "Draft saved" in autosave(shown, 1, "Who entered?").content.decode()
    saved = annotator_client.post(url, {**rewrite_post(item, item.version, question="Who entered the study?"),
                                        "draft_page": shown})
    assert saved.status_code == 302
    late = autosave(shown, 2, "Who entered the").content.decode()  # sent before Save, arrived after it
    assert "Not kept as a draft" in late and "Draft saved" not in late
    after = annotator_client.get(url).content.decode()
    assert "Restored your unsaved draft" not in after and "Who entered the study?" in after

    # A reload (a newer page) saves; the older page's save that was on its way arrives later: not kept.
    item.refresh_from_db()
    newer = _page_stamp(after)
    assert newer > shown
    assert "Draft saved" in autosave(newer, 1, "Reloaded page's text").content.decode()
    assert "Not kept as a draft" in autosave(shown, 3, "Older page's text").content.decode()
    page = annotator_client.get(url).content.decode()
    assert "Restored your unsaved draft" in page and "Reloaded page&#x27;s text" in page
    assert Draft.objects.get(user=annotator, item=item).data["question"] == "Reloaded page's text"


def test_a_save_with_nothing_autosaved_before_it_does_not_come_back_as_a_draft(annotator_client):
    """Leaving the field as Save is clicked sends an autosave beside the form: arriving after the Save, not kept."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    url, draft_url = reverse("annotation:rewrite", args=[item.pk]), reverse("annotation:rewrite_draft", args=[item.pk])
    page = annotator_client.get(url)
    assert "no-store" in page["Cache-Control"]  # Back asks again: a cached page would carry an outdated stamp
    shown = _page_stamp(page.content.decode())
    typed = rewrite_post(item, item.version, question="Who entered the study at night?")
    assert annotator_client.post(url, {**typed, "draft_page": shown}).status_code == 302
    late = annotator_client.post(draft_url, {**typed, "draft_page": shown, "draft_seq": 1}, HTTP_HX_REQUEST="true")
    assert "Not kept as a draft" in late.content.decode()
    assert "Restored your unsaved draft" not in annotator_client.get(url).content.decode()


def test_a_refused_save_from_an_older_tab_keeps_its_text(annotator):
    """Two tabs of one annotator: the newer one's work is saved; the older one's Save is refused (the item
    changed), and its text is kept and shown with the conflict, not lost."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    older, newer = client_for(annotator), client_for(annotator)
    url = reverse("annotation:rewrite", args=[item.pk])
    stamp_a = _page_stamp(older.get(url).content.decode())
    stamp_b = _page_stamp(newer.get(url).content.decode())
    assert newer.post(url, {**rewrite_post(item, item.version, question="Saved in the newer tab?"),
                            "draft_page": stamp_b}).status_code == 302
    refused = older.post(url, {**rewrite_post(item, item.version, question="Typed in the older tab?"),
                               "draft_page": stamp_a})
    assert refused.status_code == 302 and "conflict=" in refused["Location"]
    conflict = older.get(refused["Location"]).content.decode()
    assert "Typed in the older tab?" in conflict and "someone else changed this item" in conflict
    assert Draft.objects.get(user=annotator, item=item).data["question"] == "Typed in the older tab?"


def _form_values(page: str) -> dict:
    """The rewrite form's fields as the browser would send them (inputs, textareas, the checked answer)."""
    import html
    from html.parser import HTMLParser

    values: dict = {}

    class Reader(HTMLParser):
        textarea = None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "input" and a.get("name") and (a.get("type") != "radio" or "checked" in a):
                values[a["name"]] = html.unescape(a.get("value") or "")
            if tag == "textarea":
                self.textarea, values[a["name"]] = a["name"], ""

        def handle_endtag(self, tag):
            if tag == "textarea" and self.textarea:  # a browser drops the one line break after <textarea>
                values[self.textarea] = values[self.textarea].removeprefix("\n")
            self.textarea = None if tag == "textarea" else self.textarea

        def handle_data(self, data):
            if self.textarea:
                values[self.textarea] += data

    Reader(convert_charrefs=True).feed(page.split('id="rewrite-form"', 1)[-1] if 'id="rewrite-form"' in page else page)
    return values


def test_saving_again_after_a_conflict_keeps_what_only_the_other_person_changed(annotator, annotator2):
    """The audit's case: A saves a new question; B, from the same version, changes only option 4 and is refused.
    The page B gets back shows A's question and B's option (a three-way merge against the version B started from),
    so that Save again keeps both; a field both changed keeps B's text and is named."""
    set_k(Stage.REWRITE, 2)
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    a, b = client_for(annotator), client_for(annotator2)
    url = reverse("annotation:rewrite", args=[item.pk])
    base, last = item.version, f"option_{len(item.options) - 1}"
    assert a.post(url, rewrite_post(item, base, question="Who really entered the study?")).status_code == 302
    refused = b.post(url, rewrite_post(item, base, **{last: "The night porter"}))
    page = b.get(refused["Location"]).content.decode()
    form = _form_values(page)
    assert form["question"] == "Who really entered the study?" and form[last] == "The night porter", form
    item.refresh_from_db()
    assert b.post(url, {**form, "base_version": item.version}).status_code == 302
    item.refresh_from_db()
    assert item.question == "Who really entered the study?" and item.options[-1] == "The night porter"
    # Both change the question: B's text is kept in the form and the clash is named.
    assert a.post(url, rewrite_post(item, item.version, question="Who was it?")).status_code == 302
    clash = b.post(url, rewrite_post(item, item.version, question="Who came in?"))
    text = visible_text(b.get(clash["Location"]))
    assert "You both changed: question" in text
    assert _form_values(b.get(clash["Location"]).content.decode())["question"] == "Who came in?"
