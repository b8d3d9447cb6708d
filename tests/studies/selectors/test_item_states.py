"""Whether a study's answers are still about their item as it is (studies.selectors.item_states), proved over random
studies: participants answer (some run out of time on a question, some drop out, an answer may be refused because
its item changed while it was open), then answered items are reworded, given another key, rejected (deleted) or
reverted, and more participants answer. Then the results (and their page), every export (CSV, JSON, the API) and the
monitor (and its page) must agree with what the rows themselves say:

- an answer or time-out is *current* when its item is not rejected and its recorded content version is the item's
  now, *deleted* when the item is rejected, else *stale*; only current ones count in the accuracy figures (Table 3,
  the participants' accuracy), and the pooled current accuracy is what the leaderboard's Humans row reads
  (studies.selectors.answers.response_outcomes over the items not rejected);
- a stale row names at least every content field that differs between the content it saw and the content now;
- the monitor's items short of raters on their current content are exactly those that end the study with fewer than
  R answers on it once every remaining place is filled.
"""
from __future__ import annotations

import csv
import io
import json
import random
import re
from datetime import timedelta

import pytest
from django.urls import reverse

from annotation.models import CONTENT_FIELDS, Item, ItemStatus
from annotation.selectors.versions import item_contents_at
from annotation.services.items import item_update
from studies.errors import AnswerRefused
from studies.models import Attempt, AttemptStatus, ParticipantLease, ParticipantLeaseStatus, Response
from studies.selectors.answers import response_outcomes
from studies.selectors.monitor import study_monitor
from studies.selectors.results import study_results
from studies.services import attempt_expire, question_open, response_submit, study_update
from tests.studies.conftest import started_attempt

pytestmark = pytest.mark.django_db

SEEDS = range(8)
QUESTION_LIMIT = 60


def _answer(study, rng: random.Random, pid: str, *, may_drop: bool, editor=None) -> None:
    """One participant: answers (right 70% of the time), lets a question's time run out now and then, may drop out
    after an answer, and (with an editor) may see an open question's item reworded before the answer is sent."""
    attempt = started_attempt(study, pid)
    if attempt.status != AttemptStatus.STARTED:
        return
    now = attempt.started_at
    answered = 0
    while (question := question_open(attempt=attempt, now=now)) is not None:
        roll = rng.random()
        if roll < 0.12:  # this question's own time runs out; the next page load times it out
            now += timedelta(seconds=QUESTION_LIMIT + 1)
            continue
        if may_drop and answered and roll < 0.3:
            attempt_expire(attempt_id=attempt.pk, now=now)
            return
        item = Item.objects.get(pk=question.lease.item_id)
        if editor is not None and roll > 0.85:  # reworded while the question is open: the answer is refused
            _reword(item, editor)
            with pytest.raises(AnswerRefused):
                response_submit(token=attempt.token, position=question.lease.position, chosen_option=0,
                                now=now + timedelta(seconds=1))
            continue
        option = item.answer_index if rng.random() < 0.7 else rng.randrange(len(item.options))
        response_submit(token=attempt.token, position=question.lease.position, chosen_option=option,
                        now=now + timedelta(seconds=1))
        answered += 1
        now += timedelta(seconds=2)


def _reword(item: Item, editor) -> Item:
    item = Item.objects.get(pk=item.pk)
    return item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Really?"},
                       user=editor)


def _mutate(study, rng: random.Random, editor) -> None:
    """Reword, re-key, reject or revert some of the answered items (the first reworded, the second rejected)."""
    answered = sorted(set(Response.objects.filter(attempt__study=study).values_list("item_id", flat=True)))
    rng.shuffle(answered)
    originals = {}
    for n, item_id in enumerate(answered):
        item = Item.objects.get(pk=item_id)
        originals[item_id] = item.question
        roll = [0.0, 0.5][n] if n < 2 else rng.random()
        if roll < 0.25:
            _reword(item, editor)
        elif roll < 0.4:
            item_update(item_id=item.pk, base_version=item.version, user=editor,
                        changes={"answer_index": (item.answer_index + 1) % len(item.options)})
        elif roll < 0.55:
            item_update(item_id=item.pk, base_version=item.version, changes={}, status=ItemStatus.REJECTED,
                        user=editor)
        elif roll < 0.65:  # reworded, then the rewording undone: the content it had, its version back
            item = _reword(item, editor)
            item_update(item_id=item.pk, base_version=item.version, changes={"question": originals[item_id]},
                        user=editor)


def _random_study(make_study, annotator, seed: int):
    rng = random.Random(seed)
    n_items = rng.randint(3, 6)
    study = make_study(n_items=n_items, per_participant=rng.randint(1, min(3, n_items)), raters=rng.randint(2, 3),
                       question_time_limit_seconds=QUESTION_LIMIT, grace_seconds=0, slug=f"states-{seed}")
    for p in range(rng.randint(2, 4)):
        _answer(study, rng, f"before-{p}", may_drop=True)
    _mutate(study, rng, annotator)
    for p in range(rng.randint(1, 3)):
        _answer(study, rng, f"after-{p}", may_drop=True, editor=annotator)
    return study


# --------------------------------------------------------------------------- what the rows say

def _state(item: Item, version) -> str:
    if item.status == ItemStatus.REJECTED:
        return "deleted"
    return "current" if version == item.content_version else "stale"


def _from_rows(study) -> dict:
    items = {item.pk: item for item in Item.objects.filter(pk__in=study.pool.values("item_id"))}
    answers = list(Response.objects.filter(attempt__study=study).exclude(attempt__status=AttemptStatus.SCREENED_OUT)
                   .values_list("attempt_id", "item_id", "item_version", "is_correct"))
    timed_out = list(ParticipantLease.objects.filter(attempt__study=study, status=ParticipantLeaseStatus.TIMED_OUT)
                     .values_list("attempt_id", "item_id", "shown_content_version"))
    states = {s: {"answers": 0, "timed_out": 0, "correct": 0, "items": set()} for s in ("current", "stale", "deleted")}
    attempts: dict[int, dict] = {}
    for attempt_id, item_id, version, right in answers:
        s = _state(items[item_id], version)
        states[s]["answers"] += 1
        states[s]["correct"] += right
        states[s]["items"].add(item_id)
        mine = attempts.setdefault(attempt_id, {"current": 0, "stale": 0, "deleted": 0, "right": 0})
        mine[s] += 1
        mine["right"] += right and s == "current"
    for attempt_id, item_id, version in timed_out:
        s = _state(items[item_id], version)
        states[s]["timed_out"] += 1
        states[s]["items"].add(item_id)
        attempts.setdefault(attempt_id, {"current": 0, "stale": 0, "deleted": 0, "right": 0})[s] += 1
    current_answers = {}
    for _, item_id, version, _ in answers:
        if version == items[item_id].content_version:
            current_answers[item_id] = current_answers.get(item_id, 0) + 1
    return {"items": items, "states": states, "attempts": attempts, "current_answers": current_answers}


def _differing_fields(item_id: int, version: int, item: Item) -> set[str]:
    """The content fields whose value at ``version`` (its revision's snapshot) differs from the item's now."""
    seen = item_contents_at([(item_id, version)], fields=CONTENT_FIELDS).get((item_id, version))
    return {name for name in CONTENT_FIELDS if seen is not None and seen[name] != getattr(item, name)}


def _csv(client, study) -> list[dict]:
    body = b"".join(client.get(reverse("studies:study_export", args=[study.slug, "csv"])).streaming_content)
    return list(csv.DictReader(io.StringIO(body.decode())))


def _as_cell(value) -> str:
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


# --------------------------------------------------------------------------- the property

@pytest.mark.parametrize("seed", SEEDS)
def test_results_exports_and_monitor_agree_with_the_rows_after_random_edits_and_rejections(
        seed, make_study, annotator, researcher_client):
    study = _random_study(make_study, annotator, seed)
    rows = _from_rows(study)
    items, expected = rows["items"], rows["states"]
    results = study_results(study)

    # Answers and time-outs by state, and the pooled current accuracy the leaderboard's Humans row reads.
    for s, counts in expected.items():
        got = results.states[s]
        assert (got.answers, got.timed_out, got.correct, got.items) == (
            counts["answers"], counts["timed_out"], counts["correct"], len(counts["items"])), s
    outcomes = response_outcomes(item_ids=[pk for pk, item in items.items() if item.status != ItemStatus.REJECTED])
    assert results.states["current"].correct == sum(o.correct for o in outcomes.values())
    # The share choosing the first option: over the current answers, as the accuracies are.
    chosen = [c for c, item_id, version in Response.objects.filter(attempt__study=study).exclude(
        attempt__status=AttemptStatus.SCREENED_OUT).values_list("chosen_option", "item_id", "item_version")
        if _state(items[item_id], version) == "current"]
    assert results.first_option_share == (pytest.approx(sum(c == 0 for c in chosen) / len(chosen)) if chosen
                                          else None)
    assert results.states["current"].counted == sum(o.counted for o in outcomes.values())
    # Each participant's accuracy over their current answers; Table 3 over the finished ones.
    for p in results.participants:
        mine = rows["attempts"].get(p.attempt.pk, {"current": 0, "stale": 0, "deleted": 0, "right": 0})
        assert (p.counted, p.counted_correct, p.stale, p.deleted) == (
            mine["current"], mine["right"], mine["stale"], mine["deleted"])
        assert p.accuracy == (mine["right"] / mine["current"] if mine["current"] else None)
    finished = [p.counted_correct / p.counted for p in results.participants
                if p.attempt.status == AttemptStatus.FINISHED and p.counted]
    assert results.table3.n == len(finished)
    if finished:
        assert results.table3.average == pytest.approx(sum(finished) / len(finished))
    # Every item row: its state, and a stale one names (at least) the fields that differ from the content now.
    for row in results.items:
        item = items[row.study_item.item_id]
        if row.version is None and row.timed_out == 0 and not row.chosen:
            assert (row.state.state if row.state else "") == ("deleted" if item.status == ItemStatus.REJECTED else "")
            continue
        assert row.state.state == _state(item, row.version)
        assert row.state.current_version == item.content_version
        if row.version != item.content_version:
            assert _differing_fields(item.pk, row.version, item) <= set(row.state.changed_fields)
            assert row.state.changed_fields
        else:
            assert row.state.changes == ()

    # The page shows the same.
    page = researcher_client.get(reverse("studies:study_results", args=[study.slug])).content.decode()
    shown = {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in re.finditer(
        r'<tr data-state="(\w+)"><th>[^<]*</th><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>', page)}
    assert shown == {s: (c["answers"], c["timed_out"], c["correct"]) for s, c in expected.items()}
    item_rows = re.findall(r'<tr data-item="(\d+)" data-version="(\d*)" data-state="(\w*)">', page)
    assert sorted(item_rows) == sorted(
        (str(r.study_item.item_id), "" if r.version is None else str(r.version), r.state.state if r.state else "")
        for r in results.items)
    for r in results.items:
        if r.state and r.state.changes:
            row_html = page.split(f'<tr data-item="{r.study_item.item_id}" data-version="{r.version}"')[1]
            row_html = row_html.split("</tr>")[0]
            assert all(name in row_html for name in r.state.changed_fields) and annotator.username in row_html

    # Every export: the JSON download, the API and the CSV, row for row.
    data = json.loads(researcher_client.get(reverse("studies:study_export", args=[study.slug, "json"])).content)
    api = researcher_client.get(f"/api/studies/{study.slug}/export/").json()
    assert api["rows"] == data["rows"]
    changes_of = {(r.study_item.item_id, r.version): r.state.changed_fields for r in results.items if r.state}
    for row in data["rows"]:
        version = row["item_version"]
        if row["record"] == "refused" and not isinstance(version, int):
            continue
        item = items[row["item_id"]]
        assert (row["current_version"], row["stale"], row["item_state"]) == (
            item.content_version, version != item.content_version, _state(item, version)), row
        assert _differing_fields(item.pk, version, item) <= set(row["changed_fields"])
        assert bool(row["changed_fields"]) == (version != item.content_version)
        if row["record"] == "response":
            assert row["changed_fields"] == changes_of[(item.pk, version)]
    assert sum(r["record"] == "response" and r["item_state"] == "current" for r in data["rows"]) == \
        expected["current"]["answers"]
    cells = _csv(researcher_client, study)
    assert len(cells) == len(data["rows"])
    for cell, row in zip(cells, data["rows"]):
        assert {k: cell[k] for k in ("current_version", "stale", "item_state", "changed_fields")} == \
            {k: _as_cell(row[k]) for k in ("current_version", "stale", "item_state", "changed_fields")}

    # The monitor: answers on the current content per item, and the items that will end short of R on it, once
    # every open place can be taken (one question a participant: no place is stranded for want of a full share).
    study_update(study_id=study.pk, per_participant=1)
    study.refresh_from_db()
    monitor = study_monitor(study)
    assert {p.item_id: p.n_current for p in monitor["pool"]} == \
        {pk: rows["current_answers"].get(pk, 0) for pk in items}
    predicted = {p.item_id for p in monitor["pool"] if p in monitor["short_items"]}
    live = researcher_client.get(reverse("studies:study_monitor", args=[study.slug]),
                                 HTTP_HX_REQUEST="true").content.decode()
    listed = set(map(int, re.findall(r'<li data-item="(\d+)">', live)))
    assert listed == predicted
    _fill(study)
    final = _from_rows(study)["current_answers"]
    live_items = {pk for pk, item in items.items() if item.status != ItemStatus.REJECTED}  # nobody is asked again
    assert predicted == {pk for pk in live_items if final.get(pk, 0) < study.raters}
    after = study_monitor(study)
    assert {p.item_id for p in after["short_items"]} == predicted
    assert all(p.n_answered >= p.quota for p in after["pool"] if p.item_id in live_items)
    assert not after["stranded"]


def _fill(study) -> None:
    """Every remaining place answered (one item per participant: no place is left for want of a full set)."""
    for n in range(200):
        attempt = started_attempt(study, f"fill-{n}")
        if attempt.status == AttemptStatus.FULL:
            return
        while (question := question_open(attempt=Attempt.objects.select_related("study").get(pk=attempt.pk))):
            response_submit(token=attempt.token, position=question.lease.position, chosen_option=0)
    raise AssertionError("the study never filled")
