"""Roles: annotators and researchers are Django groups; participants have no account.

Every view and API states the role it needs with `role_required` (views) or the
permission classes below (DRF). Researchers may also do everything annotators do.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
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


def role_required(role: str):
    """View decorator: anonymous users go to login, users without the role get 403."""
    check = ROLE_CHECKS[role]

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied(f"This page is for {role}.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


annotator_required = role_required(ANNOTATORS)
researcher_required = role_required(RESEARCHERS)


class IsAnnotator(BasePermission):
    message = "This endpoint is for annotators."

    def has_permission(self, request, view) -> bool:
        return is_annotator(request.user)


class IsResearcher(BasePermission):
    message = "This endpoint is for researchers."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


class ResearcherPermissionBackend:
    """Staff = researchers: a researcher holds every model permission (the admin shows all models).

    Authentication itself stays with Django's ModelBackend; this backend only answers
    permission questions, so a password is never checked here.
    """

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user_obj, perm, obj=None) -> bool:
        return user_obj.is_active and is_researcher(user_obj)

    def has_module_perms(self, user_obj, app_label) -> bool:
        return user_obj.is_active and is_researcher(user_obj)


def admin_site_has_permission(request) -> bool:
    """The Django admin is for researchers (is_staff alone is not enough, and not required)."""
    return request.user.is_active and is_researcher(request.user)
