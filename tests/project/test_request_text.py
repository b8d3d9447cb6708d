"""Issue 19, break 7: a NUL byte or a lone surrogate anywhere in a request is a 400 that says where, never a 500.

`GET /api/annotation/belief/labels/?queue=%00` (also target, task, status) and
`GET /api/annotation/items/?status=%00` (also split) answered 500: PostgreSQL cannot hold a NUL in text.
foundation.request_text refuses such text before any view. Every route of the URL configuration is asked,
as a researcher: with `?x=%00`; with every query parameter it reads (the OpenAPI schema's for the API, the
names the view's module reads from `request.GET` and its GET forms' fields for pages) set to %00, then to a
lone surrogate (%ED%A0%80), and for the API each of them alone; and with a form and JSON bodies holding one.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from functools import cache
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import Resolver404, resolve
from drf_spectacular.generators import SchemaGenerator

from foundation.request_text import bytes_problem, request_problem, text_problem
from tests.support import hostile_world, routes

pytestmark = pytest.mark.django_db

NUL, SURROGATE = "%00", "%ED%A0%80"


# ---- the parameters each route reads


@cache
def schema_parameters() -> list[tuple[re.Pattern, frozenset[str]]]:
    """(path as a pattern, query parameter names) of every API operation in the OpenAPI schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, operations in schema["paths"].items():
        names = {p["name"] for op in operations.values() if isinstance(op, dict)
                 for p in op.get("parameters", []) if p.get("in") == "query"}
        found.append((re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), frozenset(names)))
    return found


def _form_fields(module, node: ast.Call) -> set[str]:
    """The fields of a form class the module builds from request.GET (`SomeForm(request.GET or None)`)."""
    return set(getattr(getattr(module, node.func.id, None), "base_fields", None) or {})


def _reads_get(node: ast.AST) -> bool:
    return "request.GET" in ast.unparse(node) or "query_params" in ast.unparse(node)


def read_names(tree: ast.AST, reads) -> set[str]:
    """The names read from what `reads(node)` recognises, directly or through a variable holding it
    (`params = self.request.query_params; params.get("run")`)."""
    aliases = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and reads(node.value)
               for target in node.targets if isinstance(target, ast.Name)}

    def source(node: ast.AST) -> bool:
        return reads(node) or isinstance(node, ast.Name) and node.id in aliases

    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            first = node.args[0]
            if (node.func.attr in ("get", "getlist") and isinstance(first, ast.Constant)
                    and isinstance(first.value, str) and source(node.func.value)):
                names.add(first.value)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and source(node.value) \
                and isinstance(node.slice.value, str):
            names.add(node.slice.value)
    return names


@cache
def module_parameters(module_name: str) -> frozenset[str]:
    """The query parameters a view module reads: `request.GET.get("x")`, `request.GET["x"]`,
    `.query_params.get("x")` (also through a variable holding them), and the fields of the forms it builds from
    request.GET."""
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    names = read_names(tree, _reads_get)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and _reads_get(node.args[0]):
            names |= _form_fields(module, node)
    return frozenset(names)


def view_module(url: str) -> str | None:
    """The name of the apps' module whose view answers `url` (None for another package's view, or no route)."""
    try:
        match = resolve(url)
    except Resolver404:
        return None
    view = getattr(match.func, "view_class", None) or getattr(match.func, "cls", None) or match.func
    module = inspect.getmodule(view)
    if module is None or module.__name__.split(".")[0] not in ("annotation", "studies", "evaluation",
                                                               "detectbench_web"):
        return None
    return module.__name__


def parameters_of(url: str) -> set[str]:
    """The query parameters the route of `url` reads (at least `x`, which nothing reads)."""
    names = {"x"}
    for pattern, schema_names in schema_parameters():
        if pattern.match(url):
            names |= schema_names
    if (module := view_module(url)) is not None:
        names |= module_parameters(module)
    return names


# ---- the walk


@pytest.fixture
def researcher_world(django_user_model):
    values = hostile_world.build()
    researcher = django_user_model.objects.create_user("nul-researcher", password="pw", is_staff=True)
    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    return client, values




def test_every_route_answers_400_to_a_nul_or_a_lone_surrogate_in_any_parameter(researcher_world):
    client, values = researcher_world
    every = routes.all_routes()
    assert len(every) >= 100
    wrong, asked, api_parameters = [], 0, set()
    for route in every:
        for url in routes.urls(route, values):
            names = sorted(parameters_of(url))
            queries = [f"x={NUL}", "&".join(f"{quote(name)}={NUL}" for name in names),
                       "&".join(f"{quote(name)}={SURROGATE}" for name in names)]
            if url.startswith("/api/"):  # the API's filters one at a time, as the issue found them
                api_parameters.update(names)
                queries += [f"{quote(name)}={bad}" for name in names for bad in (NUL, SURROGATE)]
            for query in dict.fromkeys(queries):  # each once (a route that reads nothing: `x` alone)
                response = client.get(f"{url}?{query}")
                asked += 1
                if response.status_code != 400:
                    wrong.append(f"GET {url}?{query} ({route.name}): {response.status_code}")
            bodies = [("POST", {"data": "&".join(f"{quote(n)}={NUL}" for n in sorted(names)),
                                "content_type": "application/x-www-form-urlencoded"}),
                      ("POST", {"data": json.dumps({"name": "a\x00b"}), "content_type": "application/json"}),
                      ("PATCH", {"data": '{"note": "\\ud800"}', "content_type": "application/json"})]
            for method, body in bodies[:1] if route.is_admin else bodies:
                response = routes.ask_rolled_back(client, method, url, **body)
                asked += 1
                if response.status_code != 400:
                    wrong.append(f"{method} {url} {body['content_type']} ({route.name}): {response.status_code}")
    print(f"\n{len(every)} routes, {asked} requests with a NUL or a lone surrogate, {len(wrong)} not a 400")
    # The issue's cases are among those asked.
    assert {"queue", "target", "task", "status", "split"} <= api_parameters
    assert not wrong, f"{len(wrong)} answers were not a 400:\n" + "\n".join(wrong[:40])


@pytest.mark.parametrize("url", [
    *[f"/api/annotation/belief/labels/?{name}=%00" for name in ("queue", "target", "task", "status")],
    *[f"/api/annotation/items/?{name}=%00" for name in ("status", "split")],
])
def test_the_issue_s_queries_are_a_400_that_names_the_parameter(researcher_client, url):
    response = researcher_client.get(url)
    assert response.status_code == 400
    body = response.json()
    name = url.split("?")[1].split("=")[0]
    assert body["code"] == "invalid_text" and body["field"] == name
    assert f"'{name}'" in body["detail"] and "NUL" in body["detail"]


def test_a_page_says_which_field_on_the_site_s_error_page(researcher_client):
    response = researcher_client.get("/annotation/items/?q=caf%ED%A0%80")
    page = response.content.decode()
    assert response.status_code == 400 and 'data-code="invalid_text"' in page
    assert "&#x27;q&#x27;" in page and "surrogate" in page
    assert researcher_client.get("/annotation/items/?q=caf%C3%A9").status_code == 200  # é is text


def test_a_multipart_form_field_or_file_name_with_a_nul_is_a_400(researcher_client):
    refused = researcher_client.post("/annotation/items/import/", {"split": "te\x00st", "source": "s",
                                                                   "file": SimpleUploadedFile("a.jsonl", b"{}")})
    assert refused.status_code == 400 and "split" in refused.content.decode()
    refused = researcher_client.post("/annotation/items/import/", {"split": "test", "source": "s",
                                                                   "file": SimpleUploadedFile("a\x00.jsonl", b"{}")})
    assert refused.status_code == 400 and "file" in refused.content.decode()


def test_the_check_reads_text_as_sent_and_as_decoded(rf):
    assert text_problem("fine é 多") is None and bytes_problem("fine é".encode()) is None
    assert "NUL" in text_problem("a\x00") and "surrogate" in text_problem("\udfff")
    assert "surrogate" in bytes_problem(b"\xed\xbf\xbf") and bytes_problem(b"\xf0\x9f\x98\x80") is None  # an emoji
    cases = {
        "/x/?a=1&b%00=2": "b\\u0000",  # a parameter's name
        "/x/?a=1;b=%00": "b",
        "/x/?q=a+%00": "q",
        "/x/?q=%ED%9F%BF&r=%ED%A0%80": "r",  # U+D7FF is a character; U+D800 is not
    }
    for url, field in cases.items():
        problem = request_problem(rf.get(url))
        assert problem is not None and problem.field == field, url
    assert request_problem(rf.get("/x/?q=%ED%9F%BF&page=2")) is None
    deep = {"a": [{"b": {"c\x00": 1}}]}
    problem = request_problem(rf.post("/api/x/", json.dumps(deep), content_type="application/json"))
    assert problem.field == "a[0].b.c\\u0000"
    assert request_problem(rf.post("/api/x/", "{not json", content_type="application/json")) is None
    assert request_problem(rf.post("/api/x/", "a=%00", content_type="text/plain")) is None
