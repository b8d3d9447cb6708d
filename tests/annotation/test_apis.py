"""The annotation REST API (annotation.apis): token auth, listing, submits, stale refusals, OpenAPI schema."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.forms import MAX_GRAPH_TEXT
from annotation.models import ItemStatus, Stage

from .workflow_support import api_for, make_items, set_k

pytestmark = pytest.mark.django_db


def test_api_with_token_lists_items_revisions_and_submits_decisions(annotator, annotator2, plain_user):
    set_k(Stage.VERIFICATION, 1)
    item, other = make_items(2)
    api = api_for(annotator)
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
    assert api_for(plain_user).get("/api/annotation/items/").status_code == 403
    assert APIClient().get("/api/annotation/items/").status_code in (401, 403)


def test_api_clue_graph_submit_writes_official_texts_and_refuses_stale_versions(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    payload = {"base_version": item.version,
               "clues": [{"text": "muddy boots stood by the desk", "implication": "someone came from the garden"},
                         {"text": "The gardener had a key to the study", "implication": "he could lock it"}],
               "steps": [{"inputs": ["someone came from the garden", "he could lock it"], "output": "The gardener"}]}
    saved = api_for(annotator).post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json")
    assert saved.status_code == 200, saved.content
    body = saved.json()
    assert body["evidence"].splitlines()[0] == "muddy boots stood by the desk -> someone came from the garden"
    assert body["reasoning"].splitlines()[-1] == "someone came from the garden + he could lock it -> The gardener"
    stale = api_for(annotator2).post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json")
    assert stale.status_code == 409 and stale.json()["current_version"] == item.version + 1


def test_api_names_oversized_fields_and_refuses_stale_verification(annotator):
    set_k(Stage.VERIFICATION, 1)
    (item,) = make_items(1)
    (graph_item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, start=30)
    api = api_for(annotator)
    big = api.post(f"/api/annotation/items/{graph_item.pk}/clue-graph/", {
        "base_version": 1, "clues": [{"text": "t" * (MAX_GRAPH_TEXT + 1), "implication": ""}], "steps": []},
        format="json")
    assert big.status_code == 400 and "clues" in big.json()
    stale = api.post(f"/api/annotation/items/{item.pk}/verification/", {"decision": "keep", "item_version": 7},
                     format="json")
    assert stale.status_code == 409 and stale.json()["current_version"] == 1
    long_comment = api.post(f"/api/annotation/items/{item.pk}/verification/",
                            {"decision": "keep", "item_version": 1, "comment": "c" * 5001}, format="json")
    assert long_comment.status_code == 400 and "comment" in long_comment.json()


def test_openapi_schema_describes_the_annotation_api(researcher_client):
    schema = researcher_client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in ("/api/annotation/items/", "/api/annotation/items/{id}/revisions/",
                 "/api/annotation/items/{id}/verification/", "/api/annotation/items/{id}/clue-graph/",
                 "/api/annotation/next/"):
        assert path in schema, path


def test_schema_generation_has_no_warnings_for_annotation_views():
    from django.urls import include, path
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    generator = SchemaGenerator(patterns=[path("api/annotation/", include("annotation.api_urls"))])
    schema = generator.get_schema(request=None, public=True)
    assert "/api/annotation/items/{id}/clue-graph/" in schema["paths"]
    assert not GENERATOR_STATS, GENERATOR_STATS
