"""Researcher pages and API: roles, setup, monitor, results, exports."""
import csv
import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Item
from studies.models import Attempt, AttemptStatus, Response, Study, StudyStatus
from studies.services import question_open, response_submit
from tests.studies.conftest import started_attempt


def _answer_all(attempt, options, highlight=True):
    for option in options:
        q = question_open(attempt=attempt)
        if q is None:
            return
        ctx = q.lease.item.context
        response_submit(token=attempt.token, position=q.lease.position, chosen_option=option,
                        highlights=[{"start": 0, "end": 40, "text": ctx[:40]}] if highlight else [])


@pytest.fixture
def finished_study(make_study):
    """9 items x 2 raters, 3 per participant: 3 finished, 1 expired after one answer, 1 running."""
    study = make_study(n_items=9, per_participant=3, raters=2, bonus_per_correct="0.25", slug="res")
    for pid, options in [("A", [0, 0, 0]), ("B", [1, 1, 1]), ("C", [0, 1, 0])]:
        _answer_all(started_attempt(study, pid), options)
    dropout = started_attempt(study, "D")
    _answer_all(dropout, [0])
    from studies.services import attempt_expire

    attempt_expire(attempt_id=dropout.pk)
    started_attempt(study, "E")  # running
    return study


def test_pages_need_the_researcher_role(client, annotator_client, make_study):
    study = make_study(slug="roles")
    for name, args in [("study_list", []), ("study_create", []), ("study_monitor", [study.slug]),
                       ("study_results", [study.slug]), ("study_edit", [study.slug])]:
        url = reverse(f"studies:{name}", args=args)
        assert annotator_client.get(url).status_code == 403
    client.logout()
    assert client.get(reverse("studies:study_list")).status_code == 302
    assert client.get("/api/studies/").status_code in (401, 403)


def test_nav_link_for_researchers(researcher_client):
    assert reverse("studies:study_list").encode() in researcher_client.get("/").content


def test_create_study_from_a_seeded_sample_and_edit(researcher_client, items):
    items(30)
    data = {
        "slug": "pilot", "title": "Pilot", "status": StudyStatus.OPEN, "pool_split": "test", "pool_sample": 20, "seed": 7,
        "per_participant": 5, "raters": 3, "time_limit_minutes": "60", "grace_seconds": 5, "language": "",
        "consent_text": "You agree.", "instructions": "Read carefully.", "bonus_per_correct": "0.10",
        "bonus_currency": "GBP", "completion_code": "PILOT1", "completion_url": "https://example.org/done",
    }
    response = researcher_client.post(reverse("studies:study_create"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    study = Study.objects.get(slug="pilot")
    assert study.pool.count() == 20 and set(study.pool.values_list("quota", flat=True)) == {3}
    ids = list(Item.objects.order_by("id").values_list("external_id", flat=True)[:4])
    edit = researcher_client.post(reverse("studies:study_edit", args=["pilot"]),
                                  {**data, "pool_items": " ".join(ids), "per_participant": 2})
    assert edit.status_code == 302
    study.refresh_from_db()
    assert study.per_participant == 2 and study.pool.count() == 4
    bad = researcher_client.post(reverse("studies:study_edit", args=["pilot"]), {**data, "pool_items": "nope-1"})
    assert bad.status_code == 200 and b"Unknown items" in bad.content


def test_monitor_shows_attempts_and_item_counts_and_polls_with_htmx(researcher_client, finished_study):
    url = reverse("studies:study_monitor", args=[finished_study.slug])
    page = researcher_client.get(url).content.decode()
    assert 'hx-trigger="every 5s"' in page and "3/3" in page and "1/3" in page
    with CaptureQueriesContext(connection) as queries:
        partial = researcher_client.get(url, HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and b"<html" not in partial.content
    assert len(queries) <= 10


def test_the_monitor_says_statuses_as_words_and_asks_before_expiring(researcher_client, finished_study):
    page = researcher_client.get(reverse("studies:study_monitor", args=[finished_study.slug])).content.decode()
    badges = re.findall(r'<span class="badge">([^<:]+): \d+</span>', page)
    assert badges and all(b[0].isupper() for b in badges), badges  # "Finished", not "finished"
    forms = re.findall(r'<form[^>]*attempt_expire[^>]*>|<form[^>]*/expire/[^>]*>', page)
    assert forms and all('data-confirm="End the attempt of' in f for f in forms), forms
    assert "js/polling" in page  # the refresh waits while the focus is inside (static/js/polling.js)


def test_extend_and_expire_buttons(researcher_client, finished_study):
    running = Attempt.objects.get(study=finished_study, external_participant_id="E")
    before = running.deadline
    researcher_client.post(reverse("studies:attempt_extend", args=[finished_study.slug, running.pk]), {"minutes": 10})
    running.refresh_from_db()
    assert (running.deadline - before).total_seconds() == 600
    researcher_client.post(reverse("studies:attempt_expire", args=[finished_study.slug, running.pk]))
    running.refresh_from_db()
    assert running.status == AttemptStatus.EXPIRED


def test_results_table3_kappa_keyinfo_time_and_bonus(researcher_client, finished_study):
    from studies.selectors.results import study_results

    results = study_results(finished_study)
    # Table 3 is over finished attempts (A, B, C); the dropout D (one answer) is in the "all attempts" row.
    assert results.table3.n == 3 and results.table3_all.n == 4  # E has no answers
    finished = [p.accuracy for p in results.participants if p.attempt.status == AttemptStatus.FINISHED]
    assert results.table3.top == max(finished) and results.table3.lowest == min(finished)
    assert results.table3.average == pytest.approx(sum(finished) / 3)
    accs = [p.accuracy for p in results.participants if p.accuracy is not None]
    assert results.table3_all.top == max(accs) and results.table3_all.lowest == min(accs)
    assert results.kappa_items == sum(1 for i in results.items if len(i.chosen) == 2)
    assert results.keyinfo is not None and 0 <= results.keyinfo <= 1
    assert results.median_seconds is not None and results.time_svg.startswith("<svg")
    a = next(p for p in results.participants if p.attempt.external_participant_id == "A")
    assert a.bonus == a.correct * finished_study.bonus_per_correct
    page = researcher_client.get(reverse("studies:study_results", args=[finished_study.slug])).content.decode()
    assert "Top accuracy" in page and "Fleiss" in page and "<svg" in page


def test_exports_have_every_answer_highlight_timing_flag_and_unfinished_attempts(researcher_client, finished_study):
    csv_body = b"".join(researcher_client.get(
        reverse("studies:study_export", args=[finished_study.slug, "csv"])).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(csv_body)))
    responses = [r for r in rows if r["record"] == "response"]
    assert len(responses) == Response.objects.filter(attempt__study=finished_study).count() == 10
    assert {r["attempt_status"] for r in responses} == {AttemptStatus.FINISHED, AttemptStatus.EXPIRED}
    assert all(json.loads(r["highlights"]) and r["shown_at"] and r["answered_at"] and r["seconds"] for r in responses)
    assert any(r["record"] == "lease" and r["attempt_status"] == AttemptStatus.STARTED for r in rows)
    data = json.loads(researcher_client.get(reverse("studies:study_export", args=[finished_study.slug, "json"])).content)
    assert {a["participant_id"] for a in data["attempts"]} == {"A", "B", "C", "D", "E"}
    assert len([r for r in data["rows"] if r["record"] == "response"]) == 10
    api = researcher_client.get(f"/api/studies/{finished_study.slug}/export/").json()
    assert len(api["rows"]) == len(data["rows"])
    assert researcher_client.get(f"/api/studies/{finished_study.slug}/attempts/").json()["count"] == 5
    assert researcher_client.get("/api/studies/").json()["results"][0]["slug"] == finished_study.slug


def test_kappa_over_items_with_all_three_raters(make_study):
    from annotation.agreement import counts_table, fleiss_kappa
    from studies.selectors.results import study_results

    study = make_study(n_items=3, per_participant=3, raters=3, slug="kappa")
    for pid, options in [("A", [0, 0, 0]), ("B", [0, 1, 0]), ("C", [0, 1, 2])]:
        _answer_all(started_attempt(study, pid), options)
    results = study_results(study)
    by_item = [sorted(i.chosen) for i in results.items]
    assert results.kappa_items == 3
    n_options = max(len(i.study_item.item.options) for i in results.items)
    assert results.kappa == pytest.approx(fleiss_kappa(counts_table(by_item, range(n_options))))


def test_monitor_results_and_export_queries_do_not_grow_with_attempts(researcher_client, finished_study):
    """No N+1: the same number of queries with 5 attempts as with 8."""
    urls = [reverse("studies:study_monitor", args=[finished_study.slug]),
            reverse("studies:study_results", args=[finished_study.slug]),
            reverse("studies:study_export", args=[finished_study.slug, "json"]),
            f"/api/studies/{finished_study.slug}/export/", f"/api/studies/{finished_study.slug}/attempts/"]

    def counts():
        out = []
        for url in urls:
            with CaptureQueriesContext(connection) as queries:
                assert researcher_client.get(url).status_code == 200
            out.append(len(queries))
        return out

    before = counts()
    for pid, options in [("F", [1, 0, 1]), ("G", [0])]:
        _answer_all(started_attempt(finished_study, pid), options)
    from studies.services import attempt_return

    attempt_return(attempt_id=Attempt.objects.get(external_participant_id="G").pk)
    started_attempt(finished_study, "H")  # full: 9 items x 2 raters are used up
    assert counts() == before


def test_extend_and_expire_are_post_only(researcher_client, finished_study):
    running = Attempt.objects.get(study=finished_study, external_participant_id="E")
    for name in ("attempt_extend", "attempt_expire"):
        assert researcher_client.get(reverse(f"studies:{name}", args=[finished_study.slug, running.pk])).status_code == 405
    running.refresh_from_db()
    assert running.status == AttemptStatus.STARTED


def test_create_with_the_practice_item_in_the_pool_is_a_form_error(researcher_client, items):
    ids = items(5)
    data = {
        "slug": "prac", "title": "P", "status": StudyStatus.OPEN, "pool_split": "test", "pool_sample": "", "seed": 0,
        "per_participant": 2, "raters": 1, "time_limit_seconds": 600, "time_limit_minutes": "10", "grace_seconds": 5, "language": "",
        "bonus_per_correct": "0", "bonus_currency": "GBP", "practice_item": ids[0],
        "pool_items": " ".join(str(i) for i in ids),
    }
    response = researcher_client.post(reverse("studies:study_create"), data)
    assert response.status_code == 200 and b"practice item" in response.content
    assert not Study.objects.filter(slug="prac").exists()


CSRF_TOKEN = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": "|csrf-token" content=")[^"]+')


def test_the_results_page_marks_reworded_and_rejected_answers_and_says_what_it_counts(
        researcher_client, make_study, annotator):
    """The page changes when an answered item is reworded and another rejected: the first's row is stale, naming the
    field changed, when and by whom, the second's deleted, and the headline says what the accuracy counts."""
    from annotation.models import ItemStatus
    from annotation.services.items import item_update

    study = make_study(n_items=3, per_participant=3, raters=2, slug="marks")
    for pid in ("A", "B"):
        _answer_all(started_attempt(study, pid), [0, 0, 0])
    url = reverse("studies:study_results", args=[study.slug])
    before = CSRF_TOKEN.sub(r"\1…", researcher_client.get(url).content.decode())
    reworded, rejected = (Item.objects.get(pk=pk) for pk in
                          study.pool.order_by("position").values_list("item_id", flat=True)[:2])
    item_update(item_id=reworded.pk, base_version=reworded.version, user=annotator,
                changes={"question": reworded.question + " Who?"})
    item_update(item_id=rejected.pk, base_version=rejected.version, changes={}, status=ItemStatus.REJECTED)
    page = CSRF_TOKEN.sub(r"\1…", researcher_client.get(url).content.decode())
    assert page != before

    def row(item_id):
        return page.split(f'<tr data-item="{item_id}"')[1].split("</tr>")[0]

    assert 'data-state="stale"' in row(reworded.pk) and "now at content version 2" in row(reworded.pk)
    assert "changed question" in row(reworded.pk) and annotator.username in row(reworded.pk)
    assert 'data-state="deleted"' in row(rejected.pk)
    counted = page.split('id="table3-counted"')[1].split("</p>")[0]
    assert "current answers only: the 2 answers" in counted and "2 on items whose content changed since" in counted
    assert "2 on deleted items" in counted
    assert "Pooled over the current answers" in page and "Humans row" in page
    chinese = researcher_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert all(words in chinese for words in ("按条目状态统计的答案", "准确率只计当前答案", "已删除", "过时",
                                              "现为内容版本 2", "修改了 question"))


def test_the_monitor_warns_of_items_short_of_raters_on_their_current_content(
        researcher_client, make_study, annotator):
    from annotation.services.items import item_update

    study = make_study(n_items=1, per_participant=1, raters=3, slug="short")
    _answer_all(started_attempt(study, "A"), [0])
    item = Item.objects.get(pk=study.pool.get().item_id)
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Why?"})
    for pid in ("B", "C"):
        _answer_all(started_attempt(study, pid), [0])
    assert started_attempt(study, "D").status == AttemptStatus.FULL
    url = reverse("studies:study_monitor", args=[study.slug])
    for page in (researcher_client.get(url).content.decode(),
                 researcher_client.get(url, HTTP_HX_REQUEST="true").content.decode()):
        warning = page.split('id="short-items"')[1].split("</section>")[0]
        assert "1 item has fewer than 3 answers on its current content" in warning
        assert f'data-item="{item.pk}"' in warning and "2 of 3 answers on the current content" in warning
        assert "1 on an earlier content" in warning and "1 of 1 items complete" in page
    chinese = researcher_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "1 个条目在当前内容上的答案少于 3 个" in chinese and "当前内容（内容版本 2）上有 2 / 3 个答案" in chinese
