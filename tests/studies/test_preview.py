"""A researcher previews a study as a participant: the consent, the instructions and practice, every question
with highlighting, the end pages; nothing of it is written anywhere but the researcher's session, so it takes no
place and shows up in no result, export, monitor or quota.

The proof does not trust a list of places to look: it discovers every read of the project's selectors that takes
a study (or its slug, id or items) and every page and API address that takes only a study's slug, and compares
what each returns before and after a full preview; and it counts the rows of every table.
"""
from __future__ import annotations

import dataclasses
import html
import importlib
import inspect
import json
import pkgutil
import re
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import models
from django.db.models.query import QuerySet
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Item
from studies.models import Attempt, ParticipantLease, RefusedAnswer, Response, StudyItem
from studies.services import question_open, response_submit

from .conftest import started_attempt

HX = {"HTTP_HX_REQUEST": "true"}
READ_MODULE = re.compile(r"(^|\.)(selectors|setup_checks)(\.|$)")
STUDY_ARGUMENTS = {"study", "study_id", "slug", "item_ids"}


# --------------------------------------------------------------------------- what the project reads about a study

def _read_functions() -> dict[str, object]:
    """Every public function of the apps' read modules (selectors, setup checks) whose required arguments are
    a study, its id, its slug or its items."""
    found = {}
    for package in ("studies", "evaluation", "annotation"):
        root = importlib.import_module(package)
        names = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in names:
            if not READ_MODULE.search(name):
                continue
            module = importlib.import_module(name)
            for attr, function in inspect.getmembers(module, inspect.isfunction):
                if attr.startswith("_") or function.__module__ != module.__name__:
                    continue
                params = inspect.signature(function).parameters.values()
                required = {p.name for p in params if p.default is inspect.Parameter.empty
                            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
                if required and required <= STUDY_ARGUMENTS:
                    found[f"{name}.{attr}"] = function
    return found


def _slug_routes() -> list[str]:
    """Every address of the project whose only argument is a study's slug (exports in each format)."""
    routes = []

    def walk(patterns, prefix):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                names = set(re.findall(r"<(?:\w+:)?(\w+)>", route))
                if "slug" in names and names <= {"slug", "fmt"} and not route.startswith("^"):
                    routes.extend([route.replace("<str:fmt>", fmt) for fmt in ("csv", "json")] if "fmt" in names
                                  else [route])

    walk(get_resolver().url_patterns, "/")
    return [r for r in routes if "preview" not in r]


def _plain(value, depth=0):
    """A comparable picture of what a read returned: rows as their field values, dataclasses as dicts."""
    if depth > 8:
        return "..."
    if isinstance(value, models.Model):
        return (value._meta.label, value.pk,
                {f.attname: _plain(getattr(value, f.attname), depth + 1) for f in value._meta.concrete_fields})
    if isinstance(value, QuerySet) or inspect.isgenerator(value):
        return [_plain(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items() if k != "now"}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, (str, int, float, bool, Decimal)) or value is None:
        return value
    return repr(value)


CSRF = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": "|csrf-token" content=")[^"]+')


def _everything(client: Client, study) -> dict:
    """What every read and every slug address shows about the study, and the rows of every table."""
    arguments = {"study": study, "study_id": study.pk, "slug": study.slug,
                 "item_ids": list(StudyItem.objects.filter(study=study).values_list("item_id", flat=True))}
    reads = {}
    for name, function in _read_functions().items():
        wanted = {p for p in inspect.signature(function).parameters if p in arguments}
        try:
            reads[name] = _plain(function(**{p: arguments[p] for p in wanted}))
        except Exception as error:  # a read that cannot take this study says so the same way twice
            reads[name] = f"raised {type(error).__name__}"
    pages = {}
    for route in _slug_routes():
        response = client.get(route.replace("<slug:slug>", study.slug))
        body = b"".join(response.streaming_content) if response.streaming else response.content
        pages[route] = (response.status_code, CSRF.sub(r"\1…", body.decode("utf-8", "replace")))
    tables = {model._meta.label: model.objects.count() for model in apps.get_models()
              if model._meta.label != "sessions.Session"}
    rows = {model.__name__: list(model.objects.order_by("pk").values())
            for model in (Attempt, ParticipantLease, Response, RefusedAnswer, StudyItem)}
    return {"reads": reads, "pages": pages, "tables": tables, "rows": rows}


# --------------------------------------------------------------------------- a study with real participants

@pytest.fixture
def study_with_results(make_study, items):
    ids = items(14)
    practice = Item.objects.get(pk=ids[-1])
    study = make_study(n_items=12, per_participant=3, raters=2, completion_code="REAL-CODE",
                       bonus_per_correct="0.50", practice_item=practice, question_time_limit_seconds=600)
    finished = started_attempt(study, "real-1")
    for _ in range(3):
        q = question_open(attempt=finished)
        item = Item.objects.get(pk=q.lease.item_id)
        word = re.search(r"[A-Za-z]{5,}", item.context)
        response_submit(token=finished.token, position=q.lease.position, chosen_option=0,
                        highlights=[{"start": word.start(), "end": word.end(), "text": word.group(0)}])
    stopped = started_attempt(study, "real-2")
    q = question_open(attempt=stopped)
    response_submit(token=stopped.token, position=q.lease.position, chosen_option=1, highlights=[])
    from studies.services import attempt_return

    attempt_return(attempt_id=stopped.pk)
    return study


def _position(page: str) -> int:
    return int(re.search(r'id="question" data-attempt="[^"]*" data-position="(\d+)"', page).group(1))


def _walk_the_preview(client: Client, study) -> list[str]:
    """The whole preview as a participant goes through it; returns the pages' texts."""
    preview = reverse("studies:study_preview", args=[study.slug])
    seen = []
    consent = client.get(preview).content.decode()
    assert 'id="consent"' in consent and 'id="preview-banner"' in consent
    seen.append(consent)
    assert client.post(reverse("studies:study_preview_step", args=[study.slug, "consent"])).status_code == 400
    client.post(reverse("studies:study_preview_step", args=[study.slug, "consent"]), {"consent": "yes"})
    instructions = client.get(preview).content.decode()
    assert 'id="practice"' in instructions and "Instructions" in instructions
    practice = client.post(reverse("studies:study_preview_practice", args=[study.slug]),
                           {"chosen_option": 0, "highlights": "[]"})
    assert practice.status_code == 200 and b"data-practice" in practice.content
    client.post(reverse("studies:study_preview_step", args=[study.slug, "start"]))
    page = client.get(preview).content.decode()
    answered = []
    for number in range(1, study.per_participant + 1):
        assert f"Question {number} of {study.per_participant}" in page, page[:2000]
        position = _position(page)
        context = re.search(r'data-context[^>]*>([^<]*)</div>', page).group(1)

        context = html.unescape(context)
        word = re.search(r"[A-Za-z]{6,}", context)
        spans = [{"start": word.start(), "end": word.end(), "text": word.group(0)}]
        draft_url = reverse("studies:study_preview_draft", args=[study.slug])
        saved = client.post(draft_url, {"position": position, "highlights": json.dumps(spans)})
        assert saved.status_code == 200 and saved.json()["highlights"] == spans
        assert client.get(draft_url, {"position": position}).json()["highlights"] == spans
        assert client.post(draft_url, {"position": position + 7, "highlights": "[]"}).status_code == 409
        if number == 1:  # an answer without an option is refused as a participant's is
            refused = client.post(reverse("studies:study_preview_answer", args=[study.slug]),
                                  {"position": position, "highlights": json.dumps(spans)}, **HX)
            assert refused.status_code == 400 and b"Choose one of the options." in refused.content
            reloaded = client.get(preview).content.decode()  # the draft is on the page again
            assert json.dumps(spans) in html.unescape(reloaded)
        response = client.post(reverse("studies:study_preview_answer", args=[study.slug]),
                               {"position": position, "chosen_option": number % 2, "confidence": 3,
                                "highlights": json.dumps(spans)}, **HX)
        answered.append(response.status_code)
        page = response.content.decode() if response.status_code == 200 else client.get(preview).content.decode()
        seen.append(page)
    assert 'id="complete"' in page and f"You answered {study.per_participant} questions." in page
    assert 'id="completion-code">REAL-CODE<' in page and "Return to Prolific" in page
    for kind, marker in (("expired", 'id="ended"'), ("returned", "You have left the study")):
        end = client.get(reverse("studies:study_preview_end", args=[study.slug, kind])).content.decode()
        assert marker in end
        seen.append(end)
    # Again from the start, then "Stop and leave the study".
    client.post(reverse("studies:study_preview_step", args=[study.slug, "restart"]))
    assert 'id="consent"' in client.get(preview).content.decode()
    client.post(reverse("studies:study_preview_step", args=[study.slug, "consent"]), {"consent": "yes"})
    client.post(reverse("studies:study_preview_step", args=[study.slug, "start"]))
    client.post(reverse("studies:study_preview_step", args=[study.slug, "return"]))
    assert "You have left the study" in client.get(preview).content.decode()
    return seen


def test_a_preview_walks_the_study_and_appears_in_no_result_export_monitor_or_quota(
        client, researcher, study_with_results):
    study = study_with_results
    client.force_login(researcher)
    reads = _read_functions()
    # The discovery finds the reads the results, exports, monitor and quotas are made of.
    for name in ("study_results", "study_export", "study_export_rows", "study_attempts_export", "study_monitor",
                 "study_has_room", "attempt_list", "response_outcomes", "setup_warnings", "submission_list"):
        assert any(found.endswith("." + name) for found in reads), (name, sorted(reads))
    assert any(found.startswith("evaluation.") for found in reads)  # the leaderboard's human answers too
    routes = _slug_routes()
    for wanted in ("results/", "export.csv", "export.json", "/api/studies/<slug:slug>/export/"):
        assert any(wanted in route for route in routes), (wanted, routes)

    before = _everything(client, study)
    assert _everything(client, study) == before  # the picture is stable: any difference below is the preview's
    assert before["tables"]["studies.Response"] == 4

    pages = _walk_the_preview(client, study)
    assert len(pages) >= study.per_participant + 3

    after = _everything(client, study)
    for part in ("tables", "rows", "reads", "pages"):
        changed = [k for k in before[part] if before[part][k] != after[part].get(k)]
        assert not changed, f"the preview shows in {part}: {changed}"
    assert after == before


def test_the_preview_is_for_researchers_only_and_a_researcher_on_the_public_link_is_pointed_to_it(
        client, researcher, annotator, make_study):
    study = make_study()
    preview = reverse("studies:study_preview", args=[study.slug])
    assert client.get(preview).status_code == 302  # to the login
    client.force_login(annotator)
    assert client.get(preview).status_code == 403
    landing = reverse("studies_public:landing", args=[study.slug])
    assert 'id="researcher-note"' not in client.get(landing).content.decode()
    client.force_login(researcher)
    note = client.get(landing).content.decode()
    assert 'id="researcher-note"' in note and f'href="{preview}"' in note
    monitor = client.get(reverse("studies:study_monitor", args=[study.slug])).content.decode()
    assert f'href="{preview}"' in monitor
