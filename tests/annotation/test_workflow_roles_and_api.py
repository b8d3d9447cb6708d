"""Every annotation page and API endpoint refuses anonymous users and users without a role;
annotators cannot reach researcher pages; the API works with token auth and is in the OpenAPI schema."""
from __future__ import annotations

import pytest
from django.urls import URLPattern, get_resolver, reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Adjudication, Item, ItemStatus, Stage

from .workflow_support import make_items, set_k

pytestmark = pytest.mark.django_db

RESEARCHER_ONLY = {"item_import", "progress", "agreement", "agreement_export"}


def _urls(namespace: str, item: Item, adjudication: Adjudication) -> list[tuple[str, str]]:
    values = {"pk": item.pk, "stage": "verification", "fmt": "csv"}
    resolver = get_resolver()
    patterns = resolver.namespace_dict[namespace][1].url_patterns
    out = []
    for pattern in patterns:
        assert isinstance(pattern, URLPattern)
        kwargs = {k: values[k] for k in pattern.pattern.regex.groupindex}
        if pattern.name == "adjudication":
            kwargs["pk"] = adjudication.pk
        out.append((pattern.name, reverse(f"{namespace}:{pattern.name}", kwargs=kwargs)))
    return out


@pytest.fixture
def world(annotator):
    (item,) = make_items(1)
    adjudication = Adjudication.objects.create(item=item, stage=Stage.VERIFICATION)
    return item, adjudication


def test_every_page_and_endpoint_refuses_anonymous_and_role_less_users(client, plain_user, world):
    urls = _urls("annotation", *world) + _urls("annotation_api", *world)
    assert len(urls) >= 25
    for name, url in urls:
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code in (302, 401, 403), (name, url, response.status_code)
            if response.status_code == 302:
                assert response["Location"].startswith(reverse("login")), url
    client.force_login(plain_user)
    for name, url in urls:
        for method in (client.get, client.post):
            assert method(url).status_code == 403, (name, url)


def test_annotators_cannot_reach_researcher_pages_but_reach_their_own(annotator_client, world):
    for name, url in _urls("annotation", *world):
        response = annotator_client.get(url)
        if name in RESEARCHER_ONLY:
            assert response.status_code == 403, url
        else:
            assert response.status_code in (200, 302, 405), (url, response.status_code)


def test_researcher_pages_render(researcher_client, researcher, annotator):
    from annotation.services import lease_next

    set_k(Stage.VERIFICATION, 1)
    make_items(3)
    make_items(2, status=ItemStatus.IMPORTED, start=50)
    lease_next(user=annotator, stage=Stage.VERIFICATION)
    board = researcher_client.get(reverse("annotation:progress")).content.decode()
    assert "ann1" in board and "Leases held now" in board
    assert researcher_client.post(reverse("annotation:progress"), {"split": "test"}).status_code == 302
    assert Item.objects.filter(status=ItemStatus.VERIFICATION).count() == 5
    home = researcher_client.get("/").content.decode()
    assert reverse("annotation:progress") in home and reverse("annotation:queue") in home


def _token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_api_with_token_lists_items_revisions_and_submits_decisions(annotator, annotator2, plain_user):
    set_k(Stage.VERIFICATION, 1)
    item, other = make_items(2)
    api = _token_client(annotator)
    listing = api.get("/api/annotation/items/", {"status": "verification"}).json()
    assert listing["count"] == 2 and listing["results"][0]["options"][0] == "The gardener"
    assert api.get(f"/api/annotation/items/{item.pk}/revisions/").json()["results"][0]["number"] == 1
    lease = api.post("/api/annotation/next/", {"stage": "verification"}, format="json").json()
    assert lease["item"]["id"] == item.pk
    bad = api.post(f"/api/annotation/items/{item.pk}/verification/",
                   {"decision": "delete", "criteria": [], "item_version": 1}, format="json")
    assert bad.status_code == 400
    ok = api.post(f"/api/annotation/items/{item.pk}/verification/",
                  {"decision": "delete", "criteria": ["needs_media"], "item_version": 1}, format="json")
    assert ok.status_code == 201 and ok.json()["item_status"] == "rejected"
    again = api.post(f"/api/annotation/items/{item.pk}/verification/",
                     {"decision": "keep", "item_version": 1}, format="json")
    assert again.status_code == 409
    assert _token_client(plain_user).get("/api/annotation/items/").status_code == 403
    assert APIClient().get("/api/annotation/items/").status_code in (401, 403)


def test_api_clue_graph_submit_writes_official_texts_and_refuses_stale_versions(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    payload = {"base_version": item.version,
               "clues": [{"text": "muddy boots stood by the desk", "implication": "someone came from the garden"},
                         {"text": "The gardener had a key to the study", "implication": "he could lock it"}],
               "steps": [{"inputs": ["someone came from the garden", "he could lock it"], "output": "The gardener"}]}
    saved = _token_client(annotator).post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json")
    assert saved.status_code == 200, saved.content
    body = saved.json()
    assert body["evidence"].splitlines()[0] == "muddy boots stood by the desk -> someone came from the garden"
    assert body["reasoning"].splitlines()[-1] == "someone came from the garden + he could lock it -> The gardener"
    stale = _token_client(annotator2).post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json")
    assert stale.status_code == 409 and stale.json()["current_version"] == item.version + 1


def test_openapi_schema_describes_the_annotation_api(researcher_client):
    schema = researcher_client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in ("/api/annotation/items/", "/api/annotation/items/{id}/revisions/",
                 "/api/annotation/items/{id}/verification/", "/api/annotation/items/{id}/clue-graph/",
                 "/api/annotation/next/"):
        assert path in schema, path


def test_schema_generation_has_no_warnings_for_annotation_views():
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    from django.urls import include, path

    GENERATOR_STATS.reset()
    generator = SchemaGenerator(patterns=[path("api/annotation/", include("annotation.api_urls"))])
    schema = generator.get_schema(request=None, public=True)
    assert "/api/annotation/items/{id}/clue-graph/" in schema["paths"]
    assert not GENERATOR_STATS, GENERATOR_STATS
