"""Every route of the URL configuration, with its path parameters filled from stored objects.

For tests that walk the whole site (the CSV exports, NUL bytes in every query): no hand-kept list of
routes, only a table saying how to fill each path parameter. A route whose parameter has no rule fails the
test that walks it, so a new route is walked from the day it is added.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    pattern: str  # the full route, e.g. "studies/<slug:slug>/export.<str:fmt>"
    name: str  # "namespace:name", or the pattern when the route has no name

    @property
    def is_admin(self) -> bool:
        return self.pattern.startswith("admin/")


def _entries(resolver: URLResolver, prefix: str = "", namespace: str = ""):
    """(full pattern, namespace, URLPattern) of every route under `resolver`."""
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = ":".join(part for part in (namespace, entry.namespace) if part) if entry.namespace else namespace
            yield from _entries(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), namespace, entry


def _walk(resolver: URLResolver):
    for pattern, namespace, entry in _entries(resolver):
        yield Route(pattern, f"{namespace}:{entry.name}" if entry.name else pattern)


def view_classes() -> set[type]:
    """The class of every class-based view a route leads to (DRF's `cls`, Django's `view_class`)."""
    found = (getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)
             for _, _, entry in _entries(get_resolver()))
    return {view for view in found if view is not None}


def all_routes(*, admin: bool = True) -> list[Route]:
    routes = sorted(set(_walk(get_resolver())), key=lambda r: (r.pattern, r.name))
    return [r for r in routes if admin or not r.is_admin]


#: Which stored object fills a path parameter: (route prefix, parameter) -> key of the world's values, a
#: literal ("=..."), a tuple of literals (each is asked), or FORMATS (every format a file route is asked for).
#: The first matching rule wins.
FORMATS = "formats"
PARAMETERS = [
    ("annotation/items/", "pk", "item"), ("api/annotation/items/", "pk", "item"),
    ("annotation/adjudication/", "pk", "adjudication"),
    ("annotation/belief/leases/", "pk", "belief_lease"), ("api/annotation/belief/leases/", "pk", "belief_lease"),
    ("annotation/belief/drafts/", "pk", "=999999"),
    ("annotation/belief/", "name", "belief_queue"), ("api/annotation/belief/", "name", "belief_queue"),
    ("annotation/", "stage", "=verification"),
    ("s/", "token", "token"), ("s/", "slug", "study"), ("s/", "rest", "=no/such/page"),
    ("studies/", "slug", "study"), ("api/studies/", "slug", "study"),
    ("api/studies/", "submission_id", "=no-such-submission"),
    ("studies/", "attempt_id", "attempt"), ("api/studies/", "pk", "attempt"),
    ("studies/", "submission_id", "=no-such-submission"), ("studies/", "pk", "=999999"),
    ("studies/", "step", "=start"), ("studies/", "kind", "=finished"),  # a researcher's preview
    ("evaluation/runs/", "pk", "run"), ("api/evaluation/runs/", "pk", "run"), ("evaluation/runs/", "result_pk", "result"),
    ("api/evaluation/endpoints/", "pk", "endpoint"), ("evaluation/endpoints/", "pk", "endpoint"),
    ("api/evaluation/judge-runs/", "pk", "=999999"),
    ("evaluation/judge/", "name", "=builtin"), ("api/evaluation/judge-configs/", "name", "=builtin"),
    ("evaluation/figures/", "name", "=accuracy-by-steps"), ("api/evaluation/figures/", "name", "=accuracy-by-steps"),
    ("evaluation/one-scale/", "name", ("respondents", "items", "scale", "figure")),
    ("", "fmt", FORMATS),
]
_CONVERTER = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")
_GROUP = re.compile(r"\(\?P<(?P<name>[^>]+)>(?P<body>[^)]*)\)")


def _admin_value(name: str, body: str | None) -> str:
    """Admin routes are walked for what every request gets (a NUL is a 400 before any view): any id will do."""
    if body is not None and "|" in body:
        return body.split("|")[0]  # the app index: the first app
    return "no/such/page" if name == "url" else "1"


def urls(route: Route, values: dict, *, formats: tuple[str, ...] = ("csv",)) -> list[str]:
    """The route's addresses: every path parameter filled from `values` (a parameter filled with FORMATS
    gives one address per format). A parameter without a rule raises LookupError."""

    def choices(name: str, body: str | None = None) -> list[str]:
        if route.is_admin:
            return [_admin_value(name, body)]
        for prefix, param, key in PARAMETERS:
            if param == name and route.pattern.startswith(prefix):
                if key == FORMATS:
                    return list(formats)
                if isinstance(key, tuple):
                    return list(key)
                return [key[1:] if key.startswith("=") else str(values[key])]
        raise LookupError(f"no value for <{name}> in {route.pattern}: add a rule to tests/support/routes.PARAMETERS")

    slots: list[list[str]] = []

    def slot(options: list[str]) -> str:
        slots.append(options)
        return f"\x00{len(slots) - 1}\x00"

    template = _GROUP.sub(lambda m: slot(choices(m["name"], m["body"])), route.pattern)
    template = _CONVERTER.sub(lambda m: slot(choices(m["name"])), template)
    template = "/" + template.replace("^", "").replace("$", "")
    found = []
    for combination in itertools.product(*slots):
        url = template
        for i, value in enumerate(combination):
            url = url.replace(f"\x00{i}\x00", value)
        found.append(url)
    return found


def ask_rolled_back(client, method: str, url: str, **kwargs):
    """One request to ``url`` inside a transaction rolled back after it: a walk's requests leave nothing behind for
    the next one (a test client runs the view on the test's own connection)."""
    from django.db import transaction

    with transaction.atomic():
        response = client.generic(method, url, **kwargs)
        transaction.set_rollback(True)
    return response
