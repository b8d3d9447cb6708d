"""The admin by role (issue 19, break 4; issue 17 for runs): EVERY model registered in the admin x every view
(changelist, add, change, delete, history, and the password form of users) x every role (superuser,
researcher, annotator, plain staff).

Only superusers see API tokens and login records and manage users, groups and permissions; researchers get
the research models they need with the permissions they need (no deleting runs, results or records); nobody
changes what defines a run or its status in the admin, or deletes a run with its results. GRANTS below is the
policy, written by hand: a model registered in the admin without an entry fails the test, and so does an
entry whose model is no longer registered.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

ROLES = ("superuser", "researcher", "annotator", "staff")
VIEW, ADD, CHANGE, DELETE = "view", "add", "change", "delete"
ALL = frozenset({VIEW, ADD, CHANGE, DELETE})
READ = frozenset({VIEW})

# model label -> (what a superuser may do, what a researcher may do); the rest get the admin's login.
GRANTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # accounts, permissions, API tokens and login records: superusers only
    "auth.user": (ALL, frozenset()),
    "auth.group": (ALL, frozenset()),
    "authtoken.tokenproxy": (ALL, frozenset()),
    "axes.accessattempt": (frozenset({VIEW, CHANGE, DELETE}), frozenset()),
    "axes.accesslog": (frozenset({VIEW, CHANGE, DELETE}), frozenset()),
    "axes.accessfailurelog": (frozenset({VIEW, CHANGE, DELETE}), frozenset()),
    # the annotation data: items are edited as revisions, never deleted; the workflow's records are read-only
    "annotation.item": (frozenset({VIEW, ADD, CHANGE}), frozenset({VIEW, ADD, CHANGE})),
    "annotation.stageconfig": (frozenset({VIEW, ADD, CHANGE}), frozenset({VIEW, ADD, CHANGE})),
    "annotation.itemrevision": (READ, READ),
    "annotation.annotatorlease": (READ, READ),
    "annotation.verificationdecision": (READ, READ),
    "annotation.adjudication": (READ, READ),
    "annotation.reviewdecision": (READ, READ),
    "annotation.draft": (READ, READ),
    # evaluation: runs are launched elsewhere, never added; their results never change and are never deleted
    # (a run with results is not deleted either, by anyone); researchers delete no run
    "evaluation.modelendpoint": (ALL, ALL),
    "evaluation.run": (frozenset({VIEW, CHANGE}), frozenset({VIEW, CHANGE})),
    "evaluation.result": (READ, READ),
    "evaluation.cachedresponse": (frozenset({VIEW, CHANGE, DELETE}), READ),
    # studies: participants' attempts and answers are records
    "studies.study": (ALL, ALL),
    "studies.attempt": (READ, READ),
    "studies.response": (READ, READ),
    "studies.refusedanswer": (READ, READ),
}


def _label(model) -> str:
    return f"{model._meta.app_label}.{model._meta.model_name}"


def registered() -> dict[str, type]:
    return {_label(model): model for model in admin.site._registry}


@pytest.fixture
def world(django_user_model):
    """Users of every role and one stored object of every model the admin shows."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    from annotation.models import (
        Adjudication,
        AnnotatorLease,
        AnnotatorLeaseStatus,
        Draft,
        ItemRevision,
        ReviewDecision,
        Stage,
        StageConfig,
        VerificationDecision,
    )
    from evaluation.models import CachedResponse, Result
    from evaluation.services import runs as evaluation_services
    from studies.errors import AnswerRefused
    from studies.models import RefusedAnswer, Response, StudyStatus
    from studies.services import study_create
    from studies.services.attempts import attempt_start, study_join
    from studies.services.responses import question_open, response_submit
    from tests.annotation.workflow_support import make_items
    from tests.evaluation.conftest import compute_rows

    users = {
        "superuser": django_user_model.objects.create_superuser("admin-super", password="pw-super"),
        "researcher": django_user_model.objects.create_user("admin-researcher", password="pw-r", is_staff=True),
        "annotator": django_user_model.objects.create_user("admin-annotator", password="pw-a", is_staff=True),
        "staff": django_user_model.objects.create_user("admin-staff", password="pw-s", is_staff=True),
    }
    users["researcher"].groups.add(Group.objects.get_or_create(name="researchers")[0])
    users["annotator"].groups.add(Group.objects.get_or_create(name="annotators")[0])
    for user in users.values():
        Token.objects.create(user=user)
    items = make_items(3)
    now = timezone.now()
    annotator = users["annotator"]

    def lease(item, stage):
        return AnnotatorLease.objects.create(item=item, stage=stage, annotator=annotator, leased_at=now,
                                             expires_at=now + timedelta(minutes=30),
                                             status=AnnotatorLeaseStatus.SUBMITTED, submitted_at=now)

    VerificationDecision.objects.create(lease=lease(items[0], Stage.VERIFICATION), item=items[0],
                                        annotator=annotator, decision="keep", item_version=items[0].version)
    ReviewDecision.objects.create(lease=lease(items[1], Stage.REVIEW), item=items[1], reviewer=annotator,
                                  action="approve", item_version=items[1].version)
    Adjudication.objects.create(item=items[2], stage=Stage.VERIFICATION)
    Draft.objects.create(item=items[0], user=annotator, stage=Stage.REWRITE, base_version=1, data={})
    StageConfig.objects.get_or_create(stage=Stage.VERIFICATION)
    assert ItemRevision.objects.exists()
    AccessAttempt.objects.create(username="someone", ip_address="10.0.0.1", user_agent="t", failures_since_start=1,
                                 get_data="", post_data="", http_accept="", path_info="/accounts/login/")
    AccessLog.objects.create(username="someone", ip_address="10.0.0.1", user_agent="t", http_accept="",
                             path_info="/accounts/login/")
    AccessFailureLog.objects.create(username="someone", ip_address="10.0.0.1", user_agent="t", http_accept="",
                                    path_info="/accounts/login/", locked_out=False)
    endpoint = evaluation_services.endpoint_for_cli(builtin="lexical")
    run = compute_rows(evaluation_services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False))
    assert Result.objects.filter(run=run).exists()
    CachedResponse.objects.create(key="k" * 64, model="m", text="cached")
    study = study_create(slug="admin-study", item_ids=[i.pk for i in items], per_participant=2, raters=4,
                         time_limit_seconds=600, status=StudyStatus.OPEN, completion_code="CODE-1234")
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="admin-p1").pk)
    question = question_open(attempt=attempt)
    response_submit(token=attempt.token, position=question.lease.position, chosen_option=0)
    with pytest.raises(AnswerRefused):  # an answer to a question already answered: recorded as refused
        response_submit(token=attempt.token, position=question.lease.position, chosen_option=0)
    assert Response.objects.exists() and RefusedAnswer.objects.exists()

    clients = {}
    for role, user in users.items():
        clients[role] = Client(raise_request_exception=False)
        clients[role].force_login(user)
    return users, clients


def object_id(label: str, model, users) -> str:
    if label == "authtoken.tokenproxy":  # the token admin names a token by its user
        return str(users["superuser"].pk)
    pk = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
    assert pk is not None, f"the test world has no {label}: create one in the fixture"
    return str(pk)


def expected_status(role: str, grants: frozenset[str], view: str) -> int:
    """What the admin answers `role` on `view` given the role's grants on the model."""
    if role in ("annotator", "staff"):
        return 302  # the admin's login: the admin is for researchers (and superusers)
    needs = {"changelist": {VIEW, CHANGE}, "change": {VIEW, CHANGE}, "history": {VIEW, CHANGE},
             "add": {ADD}, "delete": {DELETE}, "password": {CHANGE}}[view]
    return 200 if grants & needs else 403


def test_every_registered_model_has_a_policy_and_every_policy_a_model():
    labels = set(registered())
    assert sorted(labels - set(GRANTS)) == [], "models in the admin without an entry in GRANTS"
    assert sorted(set(GRANTS) - labels) == [], "entries in GRANTS without a model in the admin"


def test_every_model_view_and_role_answers_as_the_policy_says(world):
    users, clients = world
    failures, asked = [], 0
    for label, model in sorted(registered().items()):
        app, name = label.split(".")
        pk = object_id(label, model, users)
        urls = {"changelist": reverse(f"admin:{app}_{name}_changelist"), "add": reverse(f"admin:{app}_{name}_add"),
                "change": reverse(f"admin:{app}_{name}_change", args=[pk]),
                "delete": reverse(f"admin:{app}_{name}_delete", args=[pk]),
                "history": reverse(f"admin:{app}_{name}_history", args=[pk])}
        if label == "auth.user":
            urls["password"] = reverse("admin:auth_user_password_change", args=[pk])
        for role in ROLES:
            superuser_grants, researcher_grants = GRANTS[label]
            grants = superuser_grants if role == "superuser" else researcher_grants
            for view, url in urls.items():
                response = clients[role].get(url)
                asked += 1
                want = expected_status(role, grants, view)
                if response.status_code != want:
                    failures.append(f"{role} {view} {label}: {response.status_code}, expected {want}")
                elif want == 302 and not response["Location"].startswith("/admin/login/"):
                    failures.append(f"{role} {view} {label}: redirects to {response['Location']}")
    assert asked >= len(GRANTS) * 5 * len(ROLES)
    assert not failures, f"{len(failures)} of {asked} answers differ from the policy:\n" + "\n".join(failures)


def test_the_admin_index_lists_to_a_researcher_only_what_it_may_use(world):
    _, clients = world
    page = clients["researcher"].get("/admin/").content.decode()
    for hidden in ("/admin/auth/", "/admin/authtoken/", "/admin/axes/", "Tokens", "Users", "Groups"):
        assert hidden not in page, hidden
    assert "/admin/annotation/item/" in page and "/admin/evaluation/run/" in page
    for app in ("auth", "authtoken", "axes"):
        assert clients["researcher"].get(f"/admin/{app}/").status_code == 404
    whole = clients["superuser"].get("/admin/").content.decode()
    assert "/admin/authtoken/tokenproxy/" in whole and "/admin/auth/user/" in whole


def test_a_researcher_sees_no_token_and_changes_no_user_group_password_or_superuser_flag(world):
    users, clients = world
    researcher, superuser = users["researcher"], users["superuser"]
    client = clients["researcher"]
    keys = [token.key for token in Token.objects.all()]
    for url in ("/admin/authtoken/tokenproxy/", f"/admin/authtoken/tokenproxy/{superuser.pk}/change/",
                "/admin/auth/user/", f"/admin/auth/user/{superuser.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert not any(key in response.content.decode() for key in keys), url
    password_before = User.objects.get(pk=superuser.pk).password
    for target in (superuser, researcher):
        change = client.post(f"/admin/auth/user/{target.pk}/change/",
                             {"username": target.username, "is_superuser": "on", "is_staff": "on", "is_active": "on",
                              "date_joined_0": "2020-01-01", "date_joined_1": "00:00:00"})
        password = client.post(f"/admin/auth/user/{target.pk}/password/",
                               {"password1": "Taken-over-1234", "password2": "Taken-over-1234"})
        assert (change.status_code, password.status_code) == (403, 403), target
    group = Group.objects.get(name="researchers")
    assert client.post(f"/admin/auth/group/{group.pk}/change/", {"name": "owned"}).status_code == 403
    assert client.post("/admin/auth/group/add/", {"name": "mine"}).status_code == 403
    assert client.post("/admin/auth/user/add/", {"username": "x", "password1": "Aa-123456789",
                                                 "password2": "Aa-123456789"}).status_code == 403
    assert client.post("/admin/authtoken/tokenproxy/add/", {"user": researcher.pk}).status_code == 403
    researcher.refresh_from_db()
    assert not researcher.is_superuser and not User.objects.filter(username__in=["x"]).exists()
    assert User.objects.get(pk=superuser.pk).password == password_before
    assert Group.objects.filter(name="researchers").exists() and not Group.objects.filter(name="mine").exists()
    # Permissions by role, beyond the admin: a researcher holds none of the accounts' or tokens' permissions.
    for perm in ("auth.change_user", "auth.view_user", "auth.add_group", "auth.change_permission",
                 "authtoken.view_tokenproxy", "authtoken.view_token", "axes.delete_accessattempt",
                 "evaluation.delete_run", "evaluation.delete_result", "studies.delete_response"):
        assert not researcher.has_perm(perm), perm
    assert researcher.has_perm("annotation.change_item") and researcher.has_perm("evaluation.view_run")


def test_nobody_changes_a_runs_method_or_status_or_deletes_it_with_its_results(world):
    from evaluation.models import Result, Run

    _, clients = world
    run = Run.objects.get()
    n_results = Result.objects.filter(run=run).count()
    for role in ("superuser", "researcher"):
        client = clients[role]
        page = client.get(f"/admin/evaluation/run/{run.pk}/change/").content.decode()
        assert 'name="note"' in page and 'name="method"' not in page and 'name="status"' not in page
        response = client.post(f"/admin/evaluation/run/{run.pk}/change/",
                               {"method": "self-cot", "status": "failed", "note": f"by {role}", "seed": "7"})
        assert response.status_code == 302, role
        stored = Run.objects.get(pk=run.pk)
        assert (stored.method, stored.status, stored.seed, stored.note) == (run.method, run.status, run.seed,
                                                                             f"by {role}")
        assert client.post(f"/admin/evaluation/run/{run.pk}/delete/", {"post": "yes"}).status_code == 403
        client.post("/admin/evaluation/run/", {"action": "delete_selected", "_selected_action": [run.pk],
                                               "post": "yes"})
        result = Result.objects.filter(run=run).first()
        assert client.post(f"/admin/evaluation/result/{result.pk}/delete/", {"post": "yes"}).status_code == 403
        assert Run.objects.filter(pk=run.pk).exists() and Result.objects.filter(run=run).count() == n_results
