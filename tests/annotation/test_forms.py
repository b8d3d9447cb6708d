"""The forms of annotation (annotation.forms, and every other form of the app and its admin, found by walking them):
each whole number a form takes is bounded by what the database's integer columns hold, and every route that takes
such a form refuses a number past them (or a decimal that is no number) as input, never with a 500."""
from __future__ import annotations

import importlib
import json
import pkgutil
from types import SimpleNamespace

import pytest
from django import forms
from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import transaction
from django.forms.formsets import ManagementForm
from django.urls import reverse

import annotation
from annotation.models import Adjudication, ItemStatus, Stage, StageConfig
from annotation.services import draft_save
from annotation.services.belief import belief_queue_for
from annotation.services.belief_review import belief_lease_next
from foundation.errors import Invalid
from tests.support.routes import all_routes, urls

from .belief_support import graph_draft, record_free_text
from .test_admin import NEW_ITEM
from .workflow_support import graph_post, make_items, rewrite_post

pytestmark = pytest.mark.django_db

DB_INTEGER = (-(2**31), 2**31 - 1)
#: Whole numbers past the database's integer columns (and past 64 bits), as a client may send them.
TOO_LARGE = ("2147483648", "-2147483649", "9223372036854775808", "1" + "0" * 40)
#: Decimals that are no number a column can hold.
NOT_FINITE = ("1e309", "-1e309", "nan", "inf")


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def annotation_form_classes() -> list[type]:
    """Every form class defined in the annotation app (each of its modules imported first)."""
    for info in pkgutil.walk_packages(annotation.__path__, "annotation."):
        if ".migrations" not in info.name:
            importlib.import_module(info.name)
    found = {cls for cls in _subclasses(forms.BaseForm) if cls.__module__.startswith("annotation.")}
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))


def admin_form_classes(request) -> dict[str, type]:
    """The forms the admin builds for the annotation models it lets a superuser change, by route name."""
    found = {}
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != "annotation" or not model_admin.has_change_permission(request):
            continue
        name = f"admin:annotation_{model._meta.model_name}"
        found[f"{name}_change"] = model_admin.get_form(request, model(), change=True)
        if model_admin.has_add_permission(request):
            found[f"{name}_add"] = model_admin.get_form(request, None)
        if model_admin.list_editable:
            found[f"{name}_changelist"] = model_admin.get_changelist_form(request)
    return found


def number_fields(form_class) -> dict[str, forms.Field]:
    """Its fields that take a number (IntegerField, and FloatField and DecimalField, which are kinds of it)."""
    return {name: field for name, field in form_class.base_fields.items() if isinstance(field, forms.IntegerField)}


def limits(form_class, name: str, field: forms.Field) -> tuple:
    """The lowest and highest value the form takes: its field's bounds and, in a model form, its model field's."""
    validators = list(field.validators)
    model = getattr(getattr(form_class, "_meta", None), "model", None)
    if model is not None:
        try:
            validators += model._meta.get_field(name).validators
        except FieldDoesNotExist:
            pass
    low = max((v.limit_value for v in validators if isinstance(v, MinValueValidator)), default=None)
    high = min((v.limit_value for v in validators if isinstance(v, MaxValueValidator)), default=None)
    return low, high


def test_every_whole_number_a_form_of_annotation_takes_is_within_the_database_integer_columns(admin_user, rf):
    request = rf.get("/admin/")
    request.user = admin_user
    found = [(cls.__qualname__, cls) for cls in annotation_form_classes()]
    found += [(route, cls) for route, cls in admin_form_classes(request).items()]
    whole = [(where, cls, name, field) for where, cls in found for name, field in number_fields(cls).items()
             if not isinstance(field, (forms.FloatField, forms.DecimalField))]
    names = {(where, name) for where, _, name, _ in whole}
    # The walk finds what it must (a walk that finds nothing would pass).
    assert {("RewriteForm", "base_version"), ("ClueGraphForm", "base_version"), ("DraftDecisionForm", "base_version"),
            ("RevertForm", "revision"), ("admin:annotation_item_change", "base_version"),
            ("admin:annotation_stageconfig_changelist", "lease_minutes")} <= names, names
    unbounded = [f"{where}.{name}: {low}..{high}" for where, cls, name, field in whole
                 for low, high in [limits(cls, name, field)]
                 if low is None or high is None or low < DB_INTEGER[0] or high > DB_INTEGER[1]]
    assert not unbounded, "whole numbers a database integer column cannot hold get through:\n" + "\n".join(unbounded)


# ---- every route that takes such a form, posted numbers past the columns




@pytest.fixture
def site(admin_user):
    """An item in each stage, a judge's clue-graph draft, a review queue with a lease of the admin's, an open
    adjudication: every route that takes a form has something to take it for."""
    (verifying,) = make_items(1, status=ItemStatus.VERIFICATION, source="v")
    (rewriting,) = make_items(1, status=ItemStatus.REWRITE, source="r")
    (graphing,) = make_items(1, status=ItemStatus.CLUE_GRAPH, source="g")
    (reviewing,) = make_items(1, status=ItemStatus.REVIEW, source="rv")
    queue = belief_queue_for(name="numbers", blind=False)
    draft = graph_draft(queue, graphing)
    record_free_text(queue, [reviewing], [0.4])
    lease = belief_lease_next(queue_id=queue.pk, user=admin_user)
    for stage in Stage.values:
        StageConfig.objects.get_or_create(stage=stage)
    StageConfig.objects.filter(stage=Stage.REVIEW).delete()  # one to add
    adjudication = Adjudication.objects.create(item=make_items(1, source="a")[0], stage=Stage.VERIFICATION)
    return SimpleNamespace(verifying=verifying, rewriting=rewriting, graphing=graphing, reviewing=reviewing,
                           queue=queue, draft=draft, lease=lease, adjudication=adjudication)


def _admin_item(item) -> dict:
    return {**NEW_ITEM, "source": item.source, "external_id": item.external_id, "split": item.split,
            "context": item.context, "question": item.question, "options": json.dumps(item.options),
            "answer_index": str(item.answer_index), "evidence": item.evidence, "reasoning": item.reasoning,
            "status": item.status, "base_version": str(item.version)}


def _stage_configs() -> dict:
    configs = list(StageConfig.objects.order_by("pk"))
    data = {"form-TOTAL_FORMS": str(len(configs)), "form-INITIAL_FORMS": str(len(configs)),
            "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "1000", "_save": "Save"}
    for i, config in enumerate(configs):
        data |= {f"form-{i}-id": str(config.pk), f"form-{i}-annotators_required": str(config.annotators_required),
                 f"form-{i}-lease_minutes": str(config.lease_minutes)}
    return data


def routes(site) -> dict[str, tuple[str, str, dict]]:
    """Route name -> (method, address, what its page sends): every route that takes a form with a number."""
    review = site.reviewing
    config = StageConfig.objects.get(stage=Stage.VERIFICATION)
    return {
        "annotation:item_list": ("get", reverse("annotation:item_list"), {"page": "1"}),
        "annotation:verify": ("post", reverse("annotation:verify", args=[site.verifying.pk]),
                              {"decision": "keep", "comment": "", "item_version": site.verifying.version}),
        "annotation:rewrite": ("post", reverse("annotation:rewrite", args=[site.rewriting.pk]),
                               rewrite_post(site.rewriting, site.rewriting.version)),
        "annotation:rewrite_draft": ("post", reverse("annotation:rewrite_draft", args=[site.rewriting.pk]),
                                     rewrite_post(site.rewriting, site.rewriting.version)),
        "annotation:clue_graph": ("post", reverse("annotation:clue_graph", args=[site.graphing.pk]),
                                  graph_post(site.graphing)),
        "annotation:clue_graph_preview": ("post", reverse("annotation:clue_graph_preview", args=[site.graphing.pk]),
                                          graph_post(site.graphing)),
        "annotation:clue_graph_edit": ("post", reverse("annotation:clue_graph_edit", args=[site.graphing.pk]),
                                       graph_post(site.graphing)),
        "annotation:review": ("post", reverse("annotation:review", args=[review.pk]),
                              {"action": "approve", "comment": "", "item_version": review.version}),
        "annotation:revert": ("post", reverse("annotation:revert", args=[review.pk]),
                              {"revision": "1", "base_version": review.version}),
        "annotation:belief_draft": ("post", reverse("annotation:belief_draft", args=[site.draft.pk]),
                                    {"action": "discard", "base_version": site.graphing.version}),
        "annotation:belief_trust": ("post", reverse("annotation:belief_trust", args=[site.queue.name]),
                                    {"order": "triage", "random_share": "0.2", "reviewers_per_label": "1",
                                     "accept_threshold": "", "lease_minutes": "30", "target_half_width": ""}),
        "admin:annotation_item_change": ("post", reverse("admin:annotation_item_change", args=[review.pk]),
                                         _admin_item(review)),
        "admin:annotation_item_add": ("post", reverse("admin:annotation_item_add"), dict(NEW_ITEM)),
        "admin:annotation_stageconfig_change": (
            "post", reverse("admin:annotation_stageconfig_change", args=[config.pk]),
            {"stage": config.stage, "annotators_required": "1", "lease_minutes": "30"}),
        "admin:annotation_stageconfig_changelist": ("post", reverse("admin:annotation_stageconfig_changelist"),
                                                    _stage_configs()),
        "admin:annotation_stageconfig_add": ("post", reverse("admin:annotation_stageconfig_add"),
                                             {"stage": Stage.REVIEW, "annotators_required": "1", "lease_minutes": "30"}),
    }


class FormsSeen:
    """The forms a request builds (every BaseForm.__init__ is watched)."""

    def __init__(self, monkeypatch):
        self.forms: list[forms.BaseForm] = []
        original = forms.BaseForm.__init__
        seen = self.forms

        def watched(form, *args, **kwargs):
            original(form, *args, **kwargs)
            seen.append(form)

        monkeypatch.setattr(forms.BaseForm, "__init__", watched)

    def send(self, client, method: str, url: str, data: dict):
        """The answer to one request, whose writes are undone (each request meets the same site)."""
        self.forms.clear()
        with transaction.atomic():
            response = getattr(client, method)(url, data)
            transaction.set_rollback(True)
        return response

    def numbers(self) -> dict[str, forms.Field]:
        """The HTML name of each number field of the forms seen (a formset's own count fields aside), with its
        field."""
        return {form.add_prefix(name): field for form in self.forms if form.is_bound
                and not isinstance(form, ManagementForm)
                for name, field in form.fields.items() if isinstance(field, forms.IntegerField)}


def refused(route: str, response) -> bool:
    """A number no column holds is refused as input: a 4xx; the admin shows its form again with the error (Django's
    admin answers an invalid form with 200); the item list, a filter, leaves an invalid page number out (page 1)."""
    if route.startswith("admin:"):
        return response.status_code == 200 and b'class="errornote"' in response.content
    if route == "annotation:item_list":
        return response.status_code == 200
    return 400 <= response.status_code < 500


def routes_taking_numbers(site, client, watch: FormsSeen, request) -> set[str]:
    """Found, not listed: every annotation page asked (GET and an empty POST) that builds a form with a number
    field, and the admin's routes whose form has one."""
    values = {"item": site.rewriting.pk, "adjudication": site.adjudication.pk, "belief_lease": site.lease.pk,
              "belief_queue": site.queue.name}
    taking = set()
    for route in all_routes(admin=False):
        if route.pattern.startswith("annotation/"):
            for url in urls(route, values):
                for method in ("get", "post"):
                    watch.send(client, method, url, {})
                    if watch.numbers():
                        taking.add(route.name)
    return taking | {route for route, cls in admin_form_classes(request).items() if number_fields(cls)}


def test_every_route_that_takes_a_number_refuses_one_past_the_database_columns_as_input(site, admin_client,
                                                                                        admin_user, rf, monkeypatch):
    """The routes are found (`routes_taking_numbers`; the table `routes` says what each one's page sends, and
    builds every form class of the app that has a number); each number field of the forms a route builds is sent
    numbers past the columns (decimal fields also numbers that are none): refused as input, never a 500."""
    table = routes(site)
    watch = FormsSeen(monkeypatch)
    request = rf.get("/admin/")
    request.user = admin_user
    taking = routes_taking_numbers(site, admin_client, watch, request)
    assert {"annotation:rewrite_draft", "admin:annotation_item_change"} <= taking <= set(table), taking - set(table)
    built, failures = [], []
    for route, (method, url, data) in table.items():
        baseline = watch.send(admin_client, method, url, data)
        assert baseline.status_code in (200, 302) and b'class="errornote"' not in baseline.content, route  # taken
        built += watch.forms
        fields = watch.numbers()
        assert fields, f"{route} took no form with a number"
        for name, field in fields.items():
            for value in TOO_LARGE + (NOT_FINITE if isinstance(field, forms.FloatField) else ()):
                try:
                    response = watch.send(admin_client, method, url, {**data, name: value})
                except Exception as error:  # noqa: BLE001 - what a 500 would have been
                    failures.append(f"{route} {name}={value[:20]}: {type(error).__name__}")
                    continue
                if not refused(route, response):
                    failures.append(f"{route} {name}={value[:20]}: {response.status_code}")
    with_numbers = [cls for cls in annotation_form_classes() if number_fields(cls)]
    assert [cls for cls in with_numbers if not any(isinstance(form, cls) for form in built)] == []
    assert not failures, "\n".join(failures)


def test_a_draft_is_never_kept_with_a_version_no_item_has(site, admin_user):
    """The service itself, for any caller: a version no item can have (0, past the column) is refused naming the
    field, not stored; the largest one the column holds is kept."""
    for version in (0, 2**31, 2**63):
        with pytest.raises(Invalid) as refusal:
            draft_save(item_id=site.rewriting.pk, user=admin_user, stage=Stage.REWRITE, base_version=version,
                       data={"context": "x"})
        assert refusal.value.field == "base_version"
    assert draft_save(item_id=site.rewriting.pk, user=admin_user, stage=Stage.REWRITE, base_version=2**31 - 1,
                      data={"context": "x"}).base_version == 2**31 - 1
