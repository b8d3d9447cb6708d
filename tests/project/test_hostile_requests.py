"""Requests no browser of ours sends, to every route of the URL configuration: never a 5xx.

Each answered 500 somewhere (a user must never see one):

* a cookie holding a NUL (``sessionid="abcdefgh\\000ijkl"``: Python's cookie parser turns the quoted ``\\000`` into
  a NUL, which reached PostgreSQL through the database session on every route, and through the participant's
  cookie on the study's page). It is dropped: the request goes on as if the browser had not sent it;
* JSON nested 1000 deep (Python's decoder raises RecursionError, which DRF's parser lets through): 400;
* a UTF-16 JSON body with a NUL (``charset=utf-16``: the check read UTF-8, DRF the charset): 415; the same body
  without a charset, which the Prolific webhook's ``json.loads(request.body)`` reads as UTF-16: 400;
* a NUL in a header (User-Agent and Authorization reach queries; gunicorn refuses one, ``runserver`` does not): 400.

Every route is asked by an anonymous visitor, an annotator and a researcher (routes.all_routes, path parameters from
the hostile world), each request in a transaction rolled back after it.
"""
from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.forms import JSONField
from django.test import Client, RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from foundation.error_mapping import MAX_JSON_DEPTH
from tests.support import hostile_world, routes

pytestmark = pytest.mark.django_db

STUDY_COOKIE = "dbstudy_"  # + the study's slug (studies.views.participants.COOKIE_PREFIX)
#: Django's cookies (session, CSRF, language, messages) and the participant's, each holding a NUL.
NUL_COOKIES = {"sessionid": "abcdefgh\x00ijkl", "csrftoken": "\x00" * 32, "django_language": "en\x00",
               "messages": "a\x00b", "dbstudy_aud": "\x00x"}


def nested(depth: int) -> str:
    """`{"stage": [[...]]}` with `depth` lists and objects in all."""
    return '{"stage": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.fixture
def world(django_user_model):
    values = hostile_world.build()
    visitors = {"anonymous": Client(raise_request_exception=False)}
    for name, group, extra in (("annotator", "annotators", {}), ("researcher", "researchers", {"is_staff": True})):
        user = django_user_model.objects.create_user(f"hostile-{name}", password="pw", **extra)
        user.groups.add(Group.objects.get_or_create(name=group)[0])
        visitors[name] = Client(raise_request_exception=False)
        visitors[name].force_login(user)
    addresses = [url for route in routes.all_routes() for url in routes.urls(route, values)]
    assert len(addresses) >= 100
    return values, visitors, addresses




def test_a_cookie_holding_a_nul_is_dropped_on_every_route(world):
    values, visitors, addresses = world
    cookies = {**NUL_COOKIES, STUDY_COOKIE + values["study"]: "\x00" + values["token"]}
    wrong, asked = [], 0
    for who, client in visitors.items():
        signed_in = who != "anonymous"
        for url in addresses:
            for name, value in cookies.items():
                if not (signed_in and name == "sessionid"):  # a signed-in visitor keeps a session to be seen with
                    client.cookies[name] = value  # sent as name="...\000..." (http.cookies quotes it so)
            response = client.get(url)
            asked += 1
            if response.status_code >= 500:
                wrong.append(f"{who} GET {url}: {response.status_code}")
            elif signed_in and response.status_code in (301, 302) and "/accounts/login/" in response.get("Location", ""):
                wrong.append(f"{who} GET {url}: sent to log in, the session was lost with the other cookies")
    print(f"\n{asked} requests with a NUL in {len(cookies)} cookies, {len(wrong)} wrong")
    assert not wrong, f"{len(wrong)} wrong answers:\n" + "\n".join(wrong[:40])


def test_a_dropped_cookie_is_as_if_it_was_not_sent(world):
    values, visitors, _ = world
    anonymous = visitors["anonymous"]
    study_page = f"/s/{values['study']}/"
    without = anonymous.get(study_page)
    anonymous.cookies[STUDY_COOKIE + values["study"]] = "\x00" + values["token"]
    anonymous.cookies["sessionid"] = NUL_COOKIES["sessionid"]
    with_nul = anonymous.get(study_page)
    assert with_nul.status_code == without.status_code == 200
    assert with_nul.content.decode().count("<form") == without.content.decode().count("<form")
    assert anonymous.get("/").status_code == 302  # no session: the home page asks to log in


def test_json_nested_too_deeply_is_a_400_on_every_route(world):
    _, visitors, addresses = world
    wrong, asked = [], 0
    for who, method in (("annotator", "POST"), ("researcher", "POST"), ("researcher", "PUT"), ("researcher", "PATCH")):
        for url in addresses:
            for depth in (MAX_JSON_DEPTH + 1, 1000):
                response = routes.ask_rolled_back(visitors[who], method, url, data=nested(depth), content_type="application/json")
                asked += 1
                code = response.json().get("code") if url.startswith("/api/") and response.status_code == 400 else ""
                if response.status_code != 400 or code not in ("", "nested_too_deeply"):
                    wrong.append(f"{who} {method} {url} nested {depth} deep: {response.status_code} {code}")
    print(f"\n{asked} requests with deep JSON, {len(wrong)} not a 400")
    assert not wrong, f"{len(wrong)} answers were not a 400:\n" + "\n".join(wrong[:40])


def test_the_issue_s_deep_body_to_the_annotators_next_item_is_a_400_that_says_so(world):
    _, visitors, _ = world
    response = visitors["annotator"].post("/api/annotation/next/", nested(1000), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "nested_too_deeply" and str(MAX_JSON_DEPTH) in response.json()["detail"]
    within = visitors["annotator"].post("/api/annotation/next/", nested(MAX_JSON_DEPTH),
                                        content_type="application/json")
    assert within.status_code < 500 and within.json().get("code") != "nested_too_deeply"


def test_a_body_in_another_charset_is_a_415_and_utf_16_json_without_one_is_read_as_json_loads_reads_it(world):
    _, visitors, addresses = world
    text = json.dumps({"name": "a\x00b", "stage": "a\x00b", "extra_params": {"stop": "a\x00b"},
                       "screening_options": ["a\x00b", "c"], "event_type": "a\x00b"})
    bodies = [(text.encode("utf-16"), "application/json; charset=utf-16", 415),
              (text.encode("utf-16"), "application/json", 400),  # json.loads(bytes) sees UTF-16 (the webhook)
              (text.encode("utf-16-le"), "text/plain", 400),
              (text.encode(), "text/plain", 400),  # JSON under another Content-Type: a view may read it as JSON
              (b"name=a+AAA-b", "application/x-www-form-urlencoded; charset=utf-7", 415)]  # +AAA- is a NUL in UTF-7
    wrong, asked = [], 0
    for who, method, asked_with in (("anonymous", "POST", bodies), ("researcher", "POST", bodies),
                                    ("researcher", "PATCH", bodies[:1])):
        for url in addresses:
            for body, content_type, expected in asked_with:
                response = routes.ask_rolled_back(visitors[who], method, url, data=body, content_type=content_type)
                asked += 1
                if response.status_code != expected:
                    wrong.append(f"{who} {method} {url} {content_type}: {response.status_code}, not {expected}")
    print(f"\n{asked} requests with a NUL in another charset, {len(wrong)} wrong")
    assert not wrong, f"{len(wrong)} wrong answers:\n" + "\n".join(wrong[:40])


def test_a_nul_in_a_put_or_patch_form_is_a_400_on_every_route(world):
    """DRF parses a PUT or PATCH form as Django parses a POST one (which the middleware always read)."""
    _, visitors, addresses = world
    multipart = encode_multipart(BOUNDARY, {"name": "a\x00b", "title": "ok"})
    wrong = []
    for url in addresses:
        for method in ("PUT", "PATCH"):
            for body, content_type in ((multipart, MULTIPART_CONTENT), ("name=a%00b", "application/x-www-form-urlencoded")):
                response = routes.ask_rolled_back(visitors["researcher"], method, url, data=body, content_type=content_type)
                if response.status_code != 400 or (url.startswith("/api/") and response.json()["field"] != "name"):
                    wrong.append(f"{method} {url} {content_type.split(';')[0]}: {response.status_code}")
    assert not wrong, f"{len(wrong)} answers were not a 400:\n" + "\n".join(wrong[:40])


def test_a_nul_in_a_header_is_a_400_that_names_it(world):
    _, visitors, _ = world
    for header, meta in (("User-Agent", "HTTP_USER_AGENT"), ("Authorization", "HTTP_AUTHORIZATION"),
                         ("Accept", "HTTP_ACCEPT"), ("X-Forwarded-For", "HTTP_X_FORWARDED_FOR")):
        login = visitors["anonymous"].post("/accounts/login/", {"username": "u", "password": "p"}, **{meta: "a\x00b"})
        assert login.status_code == 400 and header in login.content.decode(), header
        api = visitors["anonymous"].get("/api/annotation/items/", **{meta: "Token a\x00b"})
        assert api.status_code == 400 and api.json()["field"] == header, header


def test_json_too_deep_for_an_admin_form_s_json_field_is_a_400(world, django_user_model):
    """The admin's JSON fields read their text with json.loads (RecursionError past the stack): every one is asked,
    on its add and its change page (of an object of the hostile world), by a superuser (who may use every one)."""
    superuser = django_user_model.objects.create_superuser("hostile-admin", password="pw")
    client = Client(raise_request_exception=False)
    client.force_login(superuser)
    request = RequestFactory().get("/admin/")
    request.user = superuser
    deep = "[" * 100_000 + "]" * 100_000
    asked, wrong = [], []
    for model, model_admin in admin.site._registry.items():
        form = model_admin.get_form(request)
        instance = model._default_manager.first()
        pages = [f"/admin/{model._meta.app_label}/{model._meta.model_name}/add/"]
        if instance is not None:
            pages.append(f"/admin/{model._meta.app_label}/{model._meta.model_name}/{instance.pk}/change/")
        for name in (name for name, field in form.base_fields.items() if isinstance(field, JSONField)):
            for url in pages:
                response = routes.ask_rolled_back(client, "POST", url, data=urlencode({name: deep}),
                                content_type="application/x-www-form-urlencoded")
                asked.append(url)
                if response.status_code >= 500:
                    wrong.append(f"{url} {name}: {response.status_code}")
    assert len(asked) >= 2 and not wrong, f"{len(wrong)} of {len(asked)} answered 5xx: {wrong}"
