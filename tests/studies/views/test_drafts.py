"""The open question's highlight draft (studies.views.drafts): saved on the server while highlights are made (per
attempt and question), shown again in any tab or browser that resumes the attempt, refused for any question that
is not open, validated as an answer's highlights are, part of the answer when it is submitted, and never undone
by an older save arriving late: each save names the revision it replaces (the participant's page and the
researcher's preview alike, every draft address the URL configuration has)."""
from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from annotation.models import Item
from studies.models import Attempt, ParticipantLease, Response
from tests.studies.views.test_participant_pages import ZH
from tests.studies.views.test_participants import HX, _position

pytestmark = pytest.mark.django_db


def _join_and_start(client, study, pid="D1", session="S-1"):
    client.post(reverse("studies_public:join", args=[study.slug]),
                {"consent": "yes", "PROLIFIC_PID": pid, "STUDY_ID": "ST", "SESSION_ID": session})
    attempt = Attempt.objects.get(external_participant_id=pid)
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    return attempt, page


def _context(attempt, position) -> str:
    return Item.objects.get(pk=attempt.leases.get(position=position).item_id).context


def _spans(context: str, *words: str) -> list[dict]:
    spans = []
    for word in words:
        start = context.index(word)
        spans.append({"start": start, "end": start + len(word), "text": word})
    return spans


def _words(context: str, n: int = 2) -> list[str]:
    """n distinct words of the story, each at least 5 letters long (so their first occurrence is unambiguous)."""
    seen = []
    for word in re.findall(r"[A-Za-z]{5,}", context):
        if word not in seen and not any(word in w or w in word for w in seen):
            seen.append(word)
        if len(seen) == n:
            return seen
    raise AssertionError("a story with too few long words")


def _save(client, attempt, position, highlights, revision=None, **extra):
    body = highlights if isinstance(highlights, str) else json.dumps(highlights)
    data = {"position": position, "highlights": body}
    if revision is not None:
        data["revision"] = revision
    return client.post(reverse("studies_public:draft", args=[attempt.token]), data, **extra)


def _draft_attr(page: str) -> list[dict]:
    raw = re.search(r'data-draft="([^"]*)"', page).group(1)
    return json.loads(html.unescape(raw))


def test_a_draft_is_saved_and_shown_in_another_tab_and_another_browser_that_resumes(client, make_study):
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    assert _draft_attr(page) == []
    context = _context(attempt, position)
    spans = _spans(context, *_words(context))

    response = _save(client, attempt, position, list(reversed(spans)))
    assert response.status_code == 200
    assert response.json() == {"position": position, "highlights": sorted(spans, key=lambda s: s["start"]),
                               "revision": 1}
    lease = ParticipantLease.objects.get(attempt=attempt, position=position)
    assert lease.draft_highlights == sorted(spans, key=lambda s: s["start"]) and lease.draft_saved_at

    # A reload or a second tab (the same cookie): the question page carries the draft.
    hub = reverse("studies_public:attempt", args=[attempt.token])
    assert _draft_attr(client.get(hub).content.decode()) == lease.draft_highlights
    # Another browser that resumes the attempt from the recruitment platform's link (id and session id).
    other = Client()
    resumed = other.get(reverse("studies_public:landing", args=[study.slug]),
                        {"PROLIFIC_PID": "D1", "SESSION_ID": "S-1"}, follow=True).content.decode()
    assert _draft_attr(resumed) == lease.draft_highlights
    # Its script reads the draft of the question it shows (GET) when the tab comes back into view.
    read = other.get(reverse("studies_public:draft", args=[attempt.token]), {"position": position})
    assert read.status_code == 200 and read.json()["highlights"] == lease.draft_highlights
    assert read.headers["Cache-Control"] == "no-store"

    # A change replaces the draft; removing every highlight empties it.
    assert _save(client, attempt, position, spans[:1]).json()["highlights"] == spans[:1]
    assert _save(client, attempt, position, []).json()["highlights"] == []
    assert ParticipantLease.objects.get(pk=lease.pk).draft_highlights == []


def test_the_answer_carries_the_highlights_and_a_form_without_them_takes_the_draft(client, make_study):
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    first = _position(page)
    context = _context(attempt, first)
    spans = _spans(context, *_words(context))
    _save(client, attempt, first, spans)
    # The answer form's highlights are validated and stored as before.
    next_page = client.post(reverse("studies_public:answer", args=[attempt.token]),
                            {"position": first, "chosen_option": 0, "highlights": json.dumps(spans[:1])}, **HX)
    assert next_page.status_code == 200
    assert Response.objects.get(lease__position=first).highlights == spans[:1]
    # The next question starts without a draft; an answer sent without a highlights field takes its draft.
    second = _position(next_page.content.decode())
    assert _draft_attr(next_page.content.decode()) == []
    context = _context(attempt, second)
    spans = _spans(context, *_words(context, 1))
    _save(client, attempt, second, spans)
    client.post(reverse("studies_public:answer", args=[attempt.token]), {"position": second, "chosen_option": 1}, **HX)
    assert Response.objects.get(lease__position=second).highlights == spans


def test_drafts_are_refused_for_any_question_that_is_not_open_and_nothing_is_stored(client, make_study):
    study = make_study(per_participant=3, raters=1, question_time_limit_seconds=60)
    attempt, page = _join_and_start(client, study)
    first = _position(page)
    context = _context(attempt, first)
    spans = _spans(context, *_words(context, 1))
    hub = reverse("studies_public:attempt", args=[attempt.token])

    # A question not shown yet (the next one) and one that does not exist.
    later = attempt.leases.exclude(position=first).order_by("position").first().position
    for position in (later, 99, "x", ""):
        refused = _save(client, attempt, position, [])
        assert refused.status_code == 409, position
        assert refused.json()["code"] == "draft_not_open" and refused.json()["continue_url"] == hub

    # An answered question (Back, a stale tab).
    client.post(reverse("studies_public:answer", args=[attempt.token]),
                {"position": first, "chosen_option": 0, "highlights": "[]"}, **HX)
    refused = _save(client, attempt, first, spans)
    assert refused.status_code == 409 and refused.json()["code"] == "draft_not_open"
    assert client.get(reverse("studies_public:draft", args=[attempt.token]), {"position": first}).status_code == 409

    # A question whose own time limit has passed (plus grace).
    current = attempt.leases.get(status="active", shown_at__isnull=False)
    ParticipantLease.objects.filter(pk=current.pk).update(shown_at=timezone.now() - timedelta(seconds=120))
    assert _save(client, attempt, current.position, []).status_code == 409

    # The attempt past its deadline, then ended; an unknown attempt.
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=30))
    refused = _save(client, attempt, current.position, [])
    assert refused.status_code == 410 and refused.json()["code"] == "draft_closed"
    client.get(hub)  # the page load closes it
    assert _save(client, attempt, current.position, []).status_code == 410
    unknown = client.post(reverse("studies_public:draft", args=["no-such-token"]), {"position": 0, "highlights": "[]"})
    assert unknown.status_code == 404 and "continue_url" not in unknown.json()

    assert not any(ParticipantLease.objects.filter(attempt=attempt).values_list("draft_highlights", flat=True))
    assert not ParticipantLease.objects.filter(draft_saved_at__isnull=False).exists()


@pytest.mark.parametrize("highlights, problem", [
    ("{not json", "JSON"),
    ("[" + "0," * 60_000 + "0]", "limited"),
    ([{"start": 0, "end": 5, "text": "wrong"}], "does not match"),
    ([{"start": -1, "end": 5, "text": "x"}], "outside"),
    ([{"start": 0, "end": 10**6, "text": "x"}], "outside"),
    ([{"start": "a", "end": 5, "text": "x"}], "start, end and text"),
    ([{"start": 5, "end": 5, "text": ""}], "outside"),
    (["just text"], "start, end and text"),
    ({"start": 0}, "list"),
    ("SIZE", "at most 40"),
])
def test_drafts_are_validated_as_answers_are(client, make_study, highlights, problem):
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    if highlights == "SIZE":
        context = _context(attempt, position)
        highlights = [{"start": i, "end": i + 1, "text": context[i]} for i in range(41)]
    response = _save(client, attempt, position, highlights)
    assert response.status_code == 400
    assert problem in response.json()["errors"]["highlights"]
    assert ParticipantLease.objects.get(attempt=attempt, position=position).draft_highlights == []


def test_drafts_need_the_csrf_token_as_every_form(make_study):
    study = make_study(per_participant=2, raters=1)
    browser = Client(enforce_csrf_checks=True)
    landing = browser.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "C1"})
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', landing.content.decode()).group(1)
    browser.post(reverse("studies_public:join", args=[study.slug]),
                 {"consent": "yes", "PROLIFIC_PID": "C1", "csrfmiddlewaretoken": token})
    attempt = Attempt.objects.get(external_participant_id="C1")
    page = browser.post(reverse("studies_public:start", args=[attempt.token]), {"csrfmiddlewaretoken": token},
                        follow=True).content.decode()
    position = _position(page)
    context = _context(attempt, position)
    spans = _spans(context, *_words(context, 1))
    assert _save(browser, attempt, position, spans).status_code == 403
    assert ParticipantLease.objects.get(attempt=attempt, position=position).draft_highlights == []
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    url = reverse("studies_public:draft", args=[attempt.token])
    saved = browser.post(url, {"position": position, "highlights": json.dumps(spans), "csrfmiddlewaretoken": token})
    assert saved.status_code == 200 and saved.json()["highlights"] == spans


def test_a_draft_made_in_one_language_is_not_shown_over_the_other(client, make_study, items):
    ids = items(12)
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": ZH})
    study = make_study(language="", extra_languages=["zh-hans"], per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    context = _context(attempt, position)
    spans = _spans(context, *_words(context, 1))
    _save(client, attempt, position, spans)
    switched = client.post(reverse("studies_public:language", args=[attempt.token]), {"language": "zh-hans"},
                           follow=True).content.decode()
    assert ZH["context"] in switched and _draft_attr(switched) == []
    # The English passage does not fit the Chinese story: a draft in Chinese is checked against it.
    assert _save(client, attempt, position, spans).status_code == 400
    zh = _spans(ZH["context"], "鞋子是干的")
    assert _save(client, attempt, position, zh).json()["highlights"] == zh


# --------------------------------------------------------------------------- revisions: an older save never wins

def _revision_attr(page: str) -> int:
    return int(re.search(r'data-draft-revision="(\d+)"', page).group(1))


def _lease(attempt, position) -> ParticipantLease:
    return ParticipantLease.objects.get(attempt=attempt, position=position)


def test_each_save_names_the_revision_it_replaces_and_the_page_carries_the_current_one(client, make_study):
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    assert _revision_attr(page) == 0  # Start's page: nothing saved yet
    context = _context(attempt, position)
    spans = _spans(context, *_words(context))
    for revision in range(3):
        saved = _save(client, attempt, position, spans[:revision % 2 + 1], revision=revision)
        assert saved.status_code == 200 and saved.json()["revision"] == revision + 1
    hub = client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()
    assert _revision_attr(hub) == 3 == _lease(attempt, position).draft_revision
    read = client.get(reverse("studies_public:draft", args=[attempt.token]), {"position": position})
    assert read.json() == {"position": position, "highlights": spans[:1], "revision": 3}
    # A client that sends no revision (a page from before revisions) saves unconditionally.
    assert _save(client, attempt, position, []).json()["revision"] == 4
    # The next question's page (the answer's htmx swap) starts at revision 0.
    answered = client.post(reverse("studies_public:answer", args=[attempt.token]),
                           {"position": position, "chosen_option": 0}, **HX).content.decode()
    assert _position(answered) != position and _revision_attr(answered) == 0


@pytest.mark.parametrize("late_one_first", [False, True])
def test_a_save_sent_before_a_reload_that_arrives_late_cannot_undo_the_reloaded_pages(client, make_study,
                                                                                      late_one_first):
    """The page had saved revision 1 and sent "remove everything" (revision 1); the participant highlighted again
    and reloaded before that save was answered. The reloaded page (revision 1: the removal had not arrived) sends
    its unsaved highlight on top. Whichever arrives first, the highlight made last is what stays."""
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    context = _context(attempt, position)
    first, again = ([span] for span in _spans(context, *_words(context)))
    assert _save(client, attempt, position, first, revision=0).json()["revision"] == 1
    reloaded = client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()
    assert _revision_attr(reloaded) == 1 and _draft_attr(reloaded) == first

    if late_one_first:  # the old page's removal is processed before the reloaded page's save
        assert _save(client, attempt, position, [], revision=1).status_code == 200
        stale = _save(client, attempt, position, again, revision=_revision_attr(reloaded))
        assert stale.status_code == 412
        assert stale.json()["code"] == "draft_stale" and stale.json()["revision"] == 2
        assert stale.json()["highlights"] == [] and stale.headers["Cache-Control"] == "no-store"
        assert _lease(attempt, position).draft_highlights == []  # nothing stored by the refused save
        # The page sends its highlights again on top of the revision it was told.
        assert _save(client, attempt, position, again, revision=2).json() == {
            "position": position, "highlights": again, "revision": 3}
    else:  # the reloaded page's save first; the removal arrives after it
        assert _save(client, attempt, position, again, revision=1).json()["revision"] == 2
        saved_at = _lease(attempt, position).draft_saved_at
        late = _save(client, attempt, position, [], revision=1)
        assert late.status_code == 412 and late.json()["highlights"] == again and late.json()["revision"] == 2
        assert _lease(attempt, position).draft_saved_at == saved_at
    assert _lease(attempt, position).draft_highlights == again


@pytest.mark.parametrize("revision", ["x", "-1", "1.5", "\u00b2", "1e3", "9" * 12, " "])
def test_a_malformed_revision_is_refused_naming_the_field_and_nothing_is_stored(client, make_study, revision):
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    context = _context(attempt, position)
    refused = _save(client, attempt, position, _spans(context, *_words(context, 1)), revision=revision)
    assert refused.status_code == 400 and "revision" in refused.json()["errors"]
    lease = _lease(attempt, position)
    assert lease.draft_highlights == [] and lease.draft_revision == 0 and lease.draft_saved_at is None


def _draft_routes() -> list[str]:
    """The name of every address of the project that saves a participant's highlight draft (discovered from the
    URLconf: the studies app's addresses named for drafts; the annotators' autosaves are another thing)."""
    found = []

    def walk(patterns, prefix):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + (pattern.namespace + ":" if pattern.namespace else ""))
            elif (isinstance(pattern, URLPattern) and pattern.name and "draft" in pattern.name
                  and pattern.callback.__module__.startswith("studies.")):
                found.append(prefix + pattern.name)

    walk(get_resolver().url_patterns, "")
    return sorted(set(found))


def test_every_draft_address_is_known_here():
    assert _draft_routes() == ["studies:study_preview_draft", "studies_public:draft"]


def _open_question(route: str, client: Client, make_study, researcher) -> tuple[str, dict, str]:
    """(the draft address, its position field, the story) of a question open on the page `route` serves."""
    study = make_study(per_participant=2, raters=1)
    if route == "studies_public:draft":
        attempt, page = _join_and_start(client, study)
        return reverse(route, args=[attempt.token]), {"position": _position(page)}, _context(attempt, _position(page))
    client.force_login(researcher)
    preview = reverse("studies:study_preview", args=[study.slug])
    client.post(reverse("studies:study_preview_step", args=[study.slug, "consent"]), {"consent": "yes"})
    client.post(reverse("studies:study_preview_step", args=[study.slug, "start"]))
    page = client.get(preview).content.decode()
    assert _revision_attr(page) == 0
    item = Item.objects.get(pk=client.session[f"study_preview:{study.slug}"]["items"][_position(page)])
    return reverse(route, args=[study.slug]), {"position": _position(page)}, item.context


@pytest.mark.parametrize("route", _draft_routes())
def test_every_draft_address_refuses_an_older_save_and_a_malformed_revision(route, client, make_study, researcher):
    url, position, context = _open_question(route, client, make_study, researcher)
    spans = _spans(context, *_words(context))

    def save(highlights, **revision):
        return client.post(url, {**position, "highlights": json.dumps(highlights), **revision})

    assert save(spans[:1], revision=0).json()["revision"] == 1
    assert save(spans, revision=1).json()["revision"] == 2
    late = save([], revision=1)
    assert late.status_code == 412 and late.json()["revision"] == 2 and late.json()["highlights"] == spans
    assert client.get(url, position).json() == {**position, "highlights": spans, "revision": 2}
    # The same highlights again at the old revision (a save run again after its commit, another tab showing
    # them): nothing to refuse, nothing written.
    again = save(spans, revision=1)
    assert again.status_code == 200 and again.json() == {**position, "highlights": spans, "revision": 2}
    bad = save([], revision="-1")
    assert bad.status_code == 400 and "revision" in bad.json()["errors"]
    assert client.get(url, position).json()["highlights"] == spans


def test_the_same_highlights_at_an_older_revision_write_nothing(client, make_study):
    """A save run again after its commit (the view's retry on a lost connection) finds its own highlights stored."""
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    context = _context(attempt, position)
    spans = _spans(context, *_words(context, 1))
    assert _save(client, attempt, position, spans, revision=0).json()["revision"] == 1
    before = _lease(attempt, position)
    again = _save(client, attempt, position, spans, revision=0)
    assert again.status_code == 200 and again.json()["revision"] == 1
    after = _lease(attempt, position)
    assert (after.draft_revision, after.draft_saved_at) == (before.draft_revision, before.draft_saved_at)


def test_an_unknown_attempt_is_a_404_whatever_the_revision(client):
    for revision in ("0", "-1", "x"):
        unknown = client.post(reverse("studies_public:draft", args=["no-such-token"]),
                              {"position": 0, "highlights": "[]", "revision": revision})
        assert unknown.status_code == 404 and unknown.json()["code"] == "draft_unknown", revision
