"""A number typed with other digits than ASCII's is refused, never a 500 (foundation.numerals).

`str.isdigit()` is true for "²" and "①", which `int()` cannot read: `?runs=²` on the leaderboard (page, CSV, LaTeX,
API, figures), `?run=²` on the judge runs' API, `ids=²` on the launch form and its estimate and a study's passing
screening options "²" answered 500. Every route of the URL configuration is asked, as a researcher, with each
parameter it reads (discovered as tests/project/test_request_text.py discovers them: the OpenAPI schema's, what the
view's module reads from the request and the fields of the forms it builds from it) set alone to such digits: in the
query string, and in a form or JSON body for the parameters a route reads from its body.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
from functools import cache
from urllib.parse import quote

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.project.test_request_text import (  # noqa: F401 - researcher_world: a fixture
    parameters_of,
    read_names,
    researcher_world,
    view_module,
)
from tests.support import routes

pytestmark = pytest.mark.django_db

#: A digit int() cannot read (as "①" and the other superscripts, which str.isdigit() also takes).
ODD_DIGITS = ("²",)
APPS = ("annotation", "studies", "evaluation", "detectbench_web")


def _reads_body(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return "request.POST" in text or "request.data" in text


@cache
def body_parameters_of_module(module_name: str) -> frozenset[str]:
    """The body fields a view module reads: `request.POST.get("x")`, `request.data["x"]` (also through a variable
    holding them), and the fields of the forms it builds from request.POST (`SomeForm(request.POST)`,
    `SomeForm(data=request.POST)`)."""
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    names = read_names(tree, _reads_body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            given = [*node.args[:1], *(kw.value for kw in node.keywords if kw.arg == "data")]
            if any(_reads_body(arg) for arg in given):
                names |= set(getattr(getattr(module, node.func.id, None), "base_fields", None) or {})
    return frozenset(names)


@cache
def _schema_bodies() -> list[tuple[str, frozenset[str]]]:
    import re

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    found = []
    for path, operations in schema["paths"].items():
        names: set[str] = set()
        for method, operation in operations.items():
            if method not in ("post", "put", "patch") or not isinstance(operation, dict):
                continue
            for media in (operation.get("requestBody") or {}).get("content", {}).values():
                ref = (media.get("schema") or {}).get("$ref", "")
                names |= set(components.get(ref.rsplit("/", 1)[-1], {}).get("properties", {}))
        found.append((re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), frozenset(names)))
    return found


def body_parameters_of(url: str) -> set[str]:
    names = {name for pattern, fields in _schema_bodies() if pattern.match(url) for name in fields}
    if (module := view_module(url)) is not None:
        names |= body_parameters_of_module(module)
    return names


def test_every_parameter_of_every_route_takes_other_digits_without_a_500(researcher_world):  # noqa: F811
    client, values = researcher_world
    every = [route for route in routes.all_routes() if not route.is_admin]
    wrong, asked, read = [], 0, set()
    for route in every:
        for url in routes.urls(route, values):
            query_names = sorted(parameters_of(url) - {"x"})
            body_names = sorted(body_parameters_of(url))
            read.update(query_names, body_names)
            for name in query_names:
                for digits in ODD_DIGITS:
                    response = client.get(f"{url}?{quote(name)}={quote(digits)}")
                    asked += 1
                    if response.status_code >= 500:
                        wrong.append(f"GET {url}?{name}={digits} ({route.name}): {response.status_code}")
            for name in body_names:
                for digits in ODD_DIGITS:
                    body = ({"data": json.dumps({name: digits}), "content_type": "application/json"}
                            if url.startswith("/api/") else {"data": {name: digits}})
                    response = routes.ask_rolled_back(client, "POST", url, **body)
                    asked += 1
                    if response.status_code >= 500:
                        wrong.append(f"POST {url} {name}={digits} ({route.name}): {response.status_code}")
    print(f"\n{len(every)} routes, {len(read)} parameters, {asked} requests with other digits, {len(wrong)} 5xx")
    # The ones the audit found are among those asked.
    assert {"runs", "run", "ids", "screening_pass"} <= read, sorted(read)
    assert not wrong, f"{len(wrong)} answers were a 5xx:\n" + "\n".join(wrong[:40])


# ---- every form and serializer of the apps, one field at a time (a clean_<field> runs whatever the other fields)


def _app_classes(base: type) -> list[type]:
    import pkgutil

    found = []
    for app in APPS:
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{app}."):
            if ".migrations" in info.name or ".management" in info.name or info.name.endswith((".tests", ".conftest")):
                continue
            module = importlib.import_module(info.name)
            found += [value for value in vars(module).values() if isinstance(value, type) and issubclass(value, base)
                      and value.__module__ == module.__name__]
    return sorted(set(found), key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _bound(cls: type, name: str, value: str):
    """The form or serializer bound to {name: value} alone, or None when it cannot be built without more (an
    argument of its own: a user, a study)."""
    from django import forms
    from django.http import QueryDict

    data = {name: value}
    if issubclass(cls, forms.BaseForm):  # as a request's body: a QueryDict
        data = QueryDict(mutable=True)
        data[name] = value
    try:
        return cls(data=data)
    except TypeError:
        return None


def test_every_form_and_serializer_field_takes_other_digits_without_an_exception():
    from django import forms
    from rest_framework import serializers

    built, unbuilt, crashed = set(), set(), []
    for cls in _app_classes(forms.BaseForm) + _app_classes(serializers.Serializer):
        fields = getattr(cls, "base_fields", None)
        if fields is None:
            probe = _bound(cls, "x", "")
            fields = probe.fields if probe is not None else {}
        for name in fields:
            for digits in ODD_DIGITS:
                bound = _bound(cls, name, digits)
                if bound is None:
                    unbuilt.add(cls.__qualname__)
                    continue
                built.add(cls.__qualname__)
                try:
                    bound.is_valid()
                except Exception as error:  # noqa: BLE001 - what the test looks for
                    crashed.append(f"{cls.__module__}.{cls.__qualname__}.{name}={digits}: {type(error).__name__}: "
                                   f"{error}")
    print(f"\n{len(built)} forms and serializers bound field by field ({len(unbuilt)} need more to be built: "
          f"{', '.join(sorted(unbuilt))})")
    assert {"StudyForm", "RunLaunchForm", "EndpointForm"} <= built
    assert not crashed, "\n".join(crashed)
