"""Highlights are saved on the server as drafts while they are made (per attempt and question), shown again in
any tab or browser that resumes the attempt, refused for any question that is not open, validated as an
answer's highlights are, and part of the answer when it is submitted."""
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Item
from studies.models import Attempt, ParticipantLease, Response

from .test_participant_pages import ZH

HX = {"HTTP_HX_REQUEST": "true"}


def _join_and_start(client, study, pid="D1", session="S-1"):
    client.post(reverse("studies_public:join", args=[study.slug]),
                {"consent": "yes", "PROLIFIC_PID": pid, "STUDY_ID": "ST", "SESSION_ID": session})
    attempt = Attempt.objects.get(external_participant_id=pid)
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    return attempt, page


def _position(page: str) -> int:
    return int(re.search(r'data-position="(\d+)"', page).group(1))


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


def _save(client, attempt, position, highlights, **extra):
    body = highlights if isinstance(highlights, str) else json.dumps(highlights)
    return client.post(reverse("studies_public:draft", args=[attempt.token]),
                       {"position": position, "highlights": body}, **extra)


def _draft_attr(page: str) -> list[dict]:
    raw = re.search(r'data-draft="([^"]*)"', page).group(1)
    return json.loads(raw.replace("&quot;", '"').replace("&amp;", "&").replace("&#x27;", "'")
                      .replace("&lt;", "<").replace("&gt;", ">"))


def test_a_draft_is_saved_and_shown_in_another_tab_and_another_browser_that_resumes(client, make_study):
    study = make_study(per_participant=2, raters=1)
    attempt, page = _join_and_start(client, study)
    position = _position(page)
    assert _draft_attr(page) == []
    context = _context(attempt, position)
    spans = _spans(context, *_words(context))

    response = _save(client, attempt, position, list(reversed(spans)))
    assert response.status_code == 200
    assert response.json() == {"position": position, "highlights": sorted(spans, key=lambda s: s["start"])}
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
