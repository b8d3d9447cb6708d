"""Roles: annotators and researchers are Django groups; participants have no account.

Every view and API states the role it needs with `role_required` (views) or the
permission classes below (DRF). Researchers may also do everything annotators do.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext, gettext_lazy, gettext_noop
from rest_framework.permissions import BasePermission

ANNOTATORS = "annotators"
RESEARCHERS = "researchers"


def _group_names(user) -> set[str]:
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_role_group_names", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._role_group_names = cached
    return cached


def is_researcher(user) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and (
        user.is_superuser or RESEARCHERS in _group_names(user)
    )


def is_annotator(user) -> bool:
    """Annotator pages are open to annotators and to researchers."""
    return is_researcher(user) or ANNOTATORS in _group_names(user)


ROLE_CHECKS: dict[str, Callable] = {ANNOTATORS: is_annotator, RESEARCHERS: is_researcher}
#: What a 403 page says to a user without the role (in the page's language).
ROLE_REFUSALS = {ANNOTATORS: gettext_noop("This page is for annotators."),
                 RESEARCHERS: gettext_noop("This page is for researchers.")}


def role_required(role: str):
    """View decorator: anonymous users go to login, users without the role get 403. What the view answers is never
    cached (unless it says otherwise): a page behind a role shows the user's own state (a lease, a queue, a draft),
    and Back after Skip showed a lease no longer held."""
    check = ROLE_CHECKS[role]

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied(gettext(ROLE_REFUSALS[role]))
            response = view(request, *args, **kwargs)
            if not response.has_header("Cache-Control"):
                add_never_cache_headers(response)
            return response

        return wrapper

    return decorator


annotator_required = role_required(ANNOTATORS)
researcher_required = role_required(RESEARCHERS)


class IsAnnotator(BasePermission):
    message = gettext_lazy("This endpoint is for annotators.")

    def has_permission(self, request, view) -> bool:
        return is_annotator(request.user)


class IsResearcher(BasePermission):
    message = gettext_lazy("This endpoint is for researchers.")

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


VIEW = frozenset({"view"})
VIEW_ADD_CHANGE = frozenset({"view", "add", "change"})
MANAGE = frozenset({"view", "add", "change", "delete"})

#: The model permissions of researchers (who are not superusers), per app and model: the research data they
#: manage, the records they read, nothing else. Accounts, groups, permissions, API tokens and login records
#: (django.contrib.auth, rest_framework.authtoken, axes) are for superusers only; no researcher deletes a
#: run, a result, a record of the annotation workflow or a participant's answer. The model admins narrow
#: this further (read-only records, fields of a run that never change); a model that is not listed here
#: has no permission at all.
RESEARCHER_PERMISSIONS: dict[str, dict[str, frozenset[str]]] = {
    "annotation": {
        "item": VIEW_ADD_CHANGE, "stageconfig": VIEW_ADD_CHANGE, "annotatorlease": frozenset({"view", "change"}),
        "itemrevision": VIEW, "verificationdecision": VIEW, "adjudication": VIEW, "reviewdecision": VIEW,
        "draft": VIEW, "beliefqueue": VIEW, "belieflabel": VIEW, "belieflease": VIEW, "beliefreview": VIEW,
    },
    "evaluation": {
        # A study or an endpoint that something refers to cannot be deleted (PROTECT); an unused one can.
        "modelendpoint": MANAGE, "run": frozenset({"view", "change"}), "result": VIEW, "cachedresponse": VIEW,
        "judgeconfig": VIEW, "judgerun": VIEW,
    },
    "studies": {
        "study": MANAGE, "studyitem": VIEW, "attempt": VIEW, "participantlease": VIEW, "response": VIEW,
        "refusedanswer": VIEW,
    },
}


def researcher_may(perm: str) -> bool:
    """Whether RESEARCHER_PERMISSIONS grants `perm` ("app_label.action_model")."""
    app_label, _, codename = perm.partition(".")
    action, _, model = codename.partition("_")
    return action in RESEARCHER_PERMISSIONS.get(app_label, {}).get(model, ())


class ResearcherPermissionBackend:
    """Researchers' model permissions, from RESEARCHER_PERMISSIONS (the admin shows them what they need).

    Superusers hold every permission anyway (Django asks no backend for them); for anyone else this
    backend grants only what the table lists, and only to researchers. Authentication itself stays
    with Django's ModelBackend; this backend only answers permission questions, so a password is
    never checked here.
    """

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user_obj, perm, obj=None) -> bool:
        return user_obj.is_active and is_researcher(user_obj) and researcher_may(perm)

    def has_module_perms(self, user_obj, app_label) -> bool:
        return user_obj.is_active and is_researcher(user_obj) and app_label in RESEARCHER_PERMISSIONS


def admin_site_has_permission(request) -> bool:
    """The Django admin is for researchers (is_staff alone is not enough, and not required)."""
    return request.user.is_active and is_researcher(request.user)
