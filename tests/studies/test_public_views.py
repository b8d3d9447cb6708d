"""Participant pages: consent, start, resume, questions, answers, completion, and what never leaks."""
import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.clue_graph import gold_key_information
from annotation.models import Item
from studies.models import Attempt, AttemptStatus, Response, StudyStatus

HX = {"HTTP_HX_REQUEST": "true"}


def _landing(client, study, **params):
    return client.get(reverse("studies_public:landing", args=[study.slug]), params)


def _join(client, study, pid=""):
    return client.post(reverse("studies_public:join", args=[study.slug]),
                       {"consent": "yes", "PROLIFIC_PID": pid, "STUDY_ID": "S1", "SESSION_ID": "X1"})


def _start(client, attempt):
    return client.post(reverse("studies_public:start", args=[attempt.token]), follow=True)


def _position(page: str) -> int:
    return int(re.search(r'data-position="(\d+)"', page).group(1))


def _submit(client, attempt, page, option=0, **extra):
    return client.post(reverse("studies_public:answer", args=[attempt.token]), {
        "position": _position(page), "chosen_option": option, "highlights": "[]", **extra}, **HX)


def test_landing_get_takes_no_place_and_consent_is_required(client, make_study):
    study = make_study()
    page = _landing(client, study, PROLIFIC_PID="P1", STUDY_ID="S", SESSION_ID="X")
    assert page.status_code == 200 and b'name="consent"' in page.content and b'value="P1"' in page.content
    assert not Attempt.objects.exists()
    refused = client.post(reverse("studies_public:join", args=[study.slug]), {"PROLIFIC_PID": "P1"})
    assert refused.status_code == 400 and not Attempt.objects.exists()


def test_join_records_external_ids_sets_cookie_and_start_is_explicit(client, make_study):
    study = make_study()
    response = _join(client, study, "P1")
    attempt = Attempt.objects.get()
    assert (attempt.external_participant_id, attempt.external_study_id, attempt.external_session_id) == ("P1", "S1", "X1")
    assert response.url == reverse("studies_public:attempt", args=[attempt.token])
    assert client.cookies[f"dbstudy_{study.slug}"].value == attempt.token
    instructions = client.get(response.url)
    assert b'id="start"' in instructions.content and attempt.leases.count() == 0  # nothing handed out before Start
    page = _start(client, attempt)
    assert b'data-seconds-left="' in page.content
    assert attempt.leases.count() == study.per_participant


def test_reload_second_tab_and_relink_resume_the_same_attempt(client, make_study, django_user_model):
    study = make_study()
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    _start(client, attempt)
    # The same browser opens the public link again: back to the attempt, no new one.
    again = _landing(client, study)
    assert again.status_code == 302 and attempt.token in again.url
    # Another browser with the same Prolific id and session id (the participant reopened it from Prolific).
    from django.test import Client

    other = Client()
    relink = other.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "P1", "SESSION_ID": "X1"})
    assert relink.status_code == 302 and attempt.token in relink.url
    assert _join(other, study, "P1").url.endswith(f"/a/{attempt.token}/")
    assert Attempt.objects.count() == 1
    # Remaining time comes from the server's deadline (bracketed by the clock around each request, not by speed).
    attempt.refresh_from_db()
    for shift in (0, 100):
        deadline = attempt.deadline - timedelta(seconds=shift)
        Attempt.objects.filter(pk=attempt.pk).update(deadline=deadline)
        before = timezone.now()
        shown = int(re.search(r'data-seconds-left="(\d+)"', client.get(again.url).content.decode()).group(1))
        after = timezone.now()
        assert int((deadline - after).total_seconds()) <= shown <= int((deadline - before).total_seconds())


def test_full_study_page(client, make_study):
    study = make_study(n_items=3, per_participant=3, raters=1)
    _join(client, study, "A")
    _start(client, Attempt.objects.get())
    from django.test import Client

    late = Client()
    page = late.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "B"})
    assert b'id="study-full"' in page.content


def test_closed_study_refuses_new_participants(client, make_study):
    study = make_study(status=StudyStatus.DRAFT)
    assert _landing(client, study).status_code == 403
    assert _join(client, study, "P").status_code == 403
    assert not Attempt.objects.exists()


def test_complete_flow_with_htmx_and_completion_code_only_at_the_end(client, make_study):
    study = make_study(n_items=4, per_participant=2, raters=1, bonus_per_correct="0.50", completion_code="C0DE-XY",
                       completion_url="https://app.prolific.com/submissions/complete?cc=C0DE-XY")
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    assert "C0DE-XY" not in page
    ctx = Item.objects.get(pk=attempt.leases.get(position=_position(page)).item_id).context
    first = _submit(client, attempt, page, option=1, confidence="3",
                    highlights=json.dumps([{"start": 0, "end": 12, "text": ctx[:12]}]))
    assert first.status_code == 200 and "C0DE-XY" not in first.content.decode()
    assert b'id="question"' in first.content and b"<html" not in first.content  # an htmx partial
    last = _submit(client, attempt, first.content.decode(), option=0)
    assert last.status_code == 204 and last.headers["HX-Redirect"].endswith(f"/a/{attempt.token}/")
    done = client.get(last.headers["HX-Redirect"]).content.decode()
    assert "C0DE-XY" in done and "prolific.com" in done
    correct = Response.objects.filter(attempt=attempt, is_correct=True).count()
    assert f"{correct * 0.5:.2f}" in done
    r = Response.objects.get(attempt=attempt, confidence=3)
    assert r.highlights == [{"start": 0, "end": 12, "text": ctx[:12]}]


def test_invalid_answers_get_400_and_nothing_is_stored(client, make_study):
    study = make_study()
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    assert _submit(client, attempt, page, option=7).status_code == 400
    bad = json.dumps([{"start": 0, "end": 5, "text": "nope!"}])
    assert _submit(client, attempt, page, option=0, highlights=bad).status_code == 400
    assert _submit(client, attempt, page, option=0, confidence="9").status_code == 400
    other = make_study()
    assert client.post(reverse("studies_public:answer", args=["not-a-token"]),
                       {"position": 0, "chosen_option": 0}).status_code == 404
    assert not Response.objects.exists() and other


def test_late_answer_gets_409_with_a_message(client, make_study):
    study = make_study(grace_seconds=2)
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    response = _submit(client, attempt, page, option=0)
    assert response.status_code == 409
    assert b"Answers after the deadline are not accepted." in response.content
    assert Attempt.objects.get().status == AttemptStatus.EXPIRED
    again = _submit(client, attempt, page, option=0)
    assert again.status_code == 410
    assert b'id="ended"' in client.get(reverse("studies_public:attempt", args=[attempt.token])).content


def test_return_button_keeps_answers(client, make_study):
    study = make_study()
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    _submit(client, attempt, page)
    client.post(reverse("studies_public:return", args=[attempt.token]))
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.RETURNED and attempt.responses.count() == 1


def test_option_markup_is_identical_for_the_correct_option(client, make_study):
    study = make_study(n_items=6, per_participant=6, raters=1)
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    for _ in range(6):
        labels = re.findall(r'<label class="option">(.*?)</label>', page, re.S)
        item = Item.objects.get(pk=attempt.leases.get(position=_position(page)).item_id)
        assert len(labels) == len(item.options)
        shapes = {re.sub(r'value="\d+"', 'value=""', re.sub(r"<span[^>]*>.*?</span>", "", l, flags=re.S)) for l in labels}
        assert len(shapes) == 1
        response = _submit(client, attempt, page)
        page = response.content.decode()


def test_practice_question_is_not_stored_and_reveals_nothing(client, make_study, items):
    practice_id = items(12)[-1]
    study = make_study(practice_item=Item.objects.get(pk=practice_id))
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode()
    assert 'id="practice"' in page
    result = client.post(reverse("studies_public:practice", args=[attempt.token]),
                         {"chosen_option": 0, "highlights": "[]"}, **HX)
    assert result.status_code == 200 and not Response.objects.exists()


def _secrets(item: Item) -> list[str]:
    out = ["answer_index", '"answer"', "'answer'", "answer=", "evidence", "reasoning", "clue_graph",
           "multi_hop_reasoning", "is_correct", "correct_option", "data-correct", "option correct"]
    out += [line.strip() for line in item.evidence.splitlines() if len(line.strip()) > 20]
    out += [line.strip() for line in item.reasoning.splitlines() if len(line.strip()) > 20 and "->" in line]
    return out


def test_no_participant_response_reveals_answers_evidence_reasoning_or_others(client, make_study, items):
    """Scan every page, partial and error a participant can reach for the answer field, evidence and reasoning."""
    from django.test import Client

    study = make_study(n_items=6, per_participant=3, raters=2, practice_item=Item.objects.get(pk=items(12)[-1]))
    neighbour = Client()
    _join(neighbour, study, "neighbour-N1")
    n_attempt = Attempt.objects.get(external_participant_id="neighbour-N1")
    npage = _start(neighbour, n_attempt).content.decode()
    _submit(neighbour, n_attempt, npage, option=2,
            highlights=json.dumps([{"start": 0, "end": 7, "text": Item.objects.get(
                pk=n_attempt.leases.get(position=_position(npage)).item_id).context[:7]}]))

    bodies = [_landing(client, study, PROLIFIC_PID="P1").content.decode()]
    join = _join(client, study, "P1")
    attempt = Attempt.objects.get(external_participant_id="P1")
    bodies.append(client.get(join.url).content.decode())
    bodies.append(client.post(reverse("studies_public:practice", args=[attempt.token]),
                              {"chosen_option": 0}, **HX).content.decode())
    page = _start(client, attempt).content.decode()
    bodies.append(page)
    for i in range(3):
        bodies.append(client.get(reverse("studies_public:attempt", args=[attempt.token]), **HX).content.decode())
        bodies.append(_submit(client, attempt, page, option=9).content.decode())  # 400 with the form again
        response = _submit(client, attempt, page, option=i % 2)
        bodies.append(response.content.decode())
        if response.status_code == 204:
            page = client.get(response.headers["HX-Redirect"]).content.decode()
        else:
            page = response.content.decode()
        bodies.append(page)
    bodies.append(_submit(client, attempt, bodies[3], option=0).content.decode())  # refused (410)
    bodies.append(client.get(reverse("studies_public:attempt", args=[attempt.token])).content.decode())
    for url in ["/api/studies/", f"/api/studies/{study.slug}/", f"/api/studies/{study.slug}/export/",
                f"/api/studies/{study.slug}/attempts/", f"/studies/{study.slug}/", f"/studies/{study.slug}/export.json"]:
        r = client.get(url)
        assert r.status_code in (302, 401, 403), url
        bodies.append(r.content.decode())

    secrets = set()
    for item in Item.objects.filter(pk__in=[*items(6), items(12)[-1]]):
        secrets.update(_secrets(item))
        secrets.update(gold_key_information(item.evidence))
    secrets.update(["neighbour-N1", n_attempt.token])
    everything = "\n".join(bodies)
    # Clues are spans of the story by design: only what is not part of any shown text can leak.
    public = "\n".join(f"{i.context}\n{i.question}\n" + "\n".join(i.options) for i in Item.objects.all())
    leaks = [s for s in secrets if s and s in everything and s not in public]
    assert "C0DE" not in everything
    assert not leaks, leaks[:5]


def sql_count(captured) -> int:
    """Statements a request runs in production: the test's own SAVEPOINTs (inside its transaction) are left out."""
    return sum(1 for q in captured.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT")))


def test_question_page_and_submit_query_counts(client, make_study):
    study = make_study(n_items=20, per_participant=15, raters=1)
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    url = reverse("studies_public:attempt", args=[attempt.token])
    client.get(url)
    with CaptureQueriesContext(connection) as page_queries:
        page = client.get(url).content.decode()
    with CaptureQueriesContext(connection) as submit_queries:
        response = _submit(client, attempt, page, option=0)
    assert response.status_code == 200
    page_n, submit_n = sql_count(page_queries), sql_count(submit_queries)
    print(f"\nqueries: question page {page_n}, answer submit (+ next question) {submit_n}")
    # attempt + study, its leases, the item shown; submit: attempt (locked), leases, answered and next item,
    # INSERT, UPDATE of both leases (+ BEGIN/COMMIT outside the test's transaction). The issue allows 8.
    assert page_n <= 3
    assert submit_n <= 5


# --------------------------------------------------------------------------- review fixes

@pytest.mark.parametrize("fields", [
    {"highlights": "{not json"},                          # was silently accepted as "no highlights"
    {"highlights": "[" * 50_000 + "]" * 50_000},          # RecursionError: was a 500
    {"highlights": "[" + "0," * 60_000 + "0]"},           # oversized
    {"chosen_option": "²"},                               # str.isdigit() but not int(): was a 500
    {"confidence": "9" * 5000},                           # beyond int()'s digit limit: was a 500
])
def test_malformed_or_oversized_fields_get_400_naming_the_field(client, make_study, fields):
    study = make_study()
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    page = _start(client, attempt).content.decode()
    response = _submit(client, attempt, page, option=0, **{"highlights": "[]", **fields})
    assert response.status_code == 400 and b'id="question"' in response.content
    assert not Response.objects.exists()


def test_return_after_the_deadline_is_an_expiry(client, make_study):
    study = make_study(grace_seconds=2)
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    _start(client, attempt)
    Attempt.objects.filter(pk=attempt.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    client.post(reverse("studies_public:return", args=[attempt.token]))
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.EXPIRED


def test_practice_says_whether_the_answer_was_right(client, make_study, items):
    practice = Item.objects.get(pk=items(12)[-1])
    study = make_study(practice_item=practice)
    _join(client, study, "P1")
    attempt = Attempt.objects.get()
    url = reverse("studies_public:practice", args=[attempt.token])
    wrong = (practice.answer_index + 1) % len(practice.options)
    right_page = client.post(url, {"chosen_option": practice.answer_index, "highlights": "[]"}, **HX)
    wrong_page = client.post(url, {"chosen_option": wrong, "highlights": "[]"}, **HX)
    assert b'data-practice="right"' in right_page.content and b'data-practice="wrong"' in wrong_page.content
    assert client.post(url, {"highlights": "[]"}, **HX).status_code == 400
    assert not Response.objects.exists()


def test_stop_confirmation_is_a_data_attribute_not_an_inline_handler(client, make_study):
    study = make_study()
    _join(client, study, "P1")
    page = _start(client, Attempt.objects.get()).content.decode()
    form = re.search(r'<form[^>]*class="return-form"[^>]*>', page).group(0)
    assert 'data-confirm="Stop now? Your answers so far are kept, but you cannot come back."' in form
    assert "onsubmit" not in page and "confirm(" not in page
