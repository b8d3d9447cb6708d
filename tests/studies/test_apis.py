"""The researchers' studies API: generic views over the services and selectors, constant query counts, a clean schema."""
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Item
from studies.models import Attempt, AttemptStatus, Study, StudyStatus

from .conftest import started_attempt


def _count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200, url
    return len(queries)


def test_create_from_a_seeded_sample_then_patch_settings(researcher_client, items, researcher):
    items(12)
    body = {"slug": "api", "title": "API", "status": StudyStatus.OPEN, "pool_split": "test", "pool_sample": 8,
            "seed": 4, "per_participant": 3, "raters": 2}
    created = researcher_client.post("/api/studies/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["n_items"] == 8 and created.json()["n_attempts"] == 0
    study = Study.objects.get(slug="api")
    assert study.created_by == researcher and set(study.pool.values_list("quota", flat=True)) == {2}
    again = researcher_client.post("/api/studies/", body, content_type="application/json")
    assert again.status_code == 400 and "slug" in again.json()  # validation by the serializer
    external = list(Item.objects.order_by("id").values_list("external_id", flat=True)[:5])
    patched = researcher_client.patch("/api/studies/api/", {"pool_items": external, "slug": "renamed"},
                                      content_type="application/json")
    assert patched.status_code == 200 and patched.json()["slug"] == "api" and patched.json()["n_items"] == 5
    assert researcher_client.put("/api/studies/api/", body, content_type="application/json").status_code == 405


def test_attempt_actions_through_the_api(researcher_client, make_study):
    study = make_study(slug="acts")
    attempt = started_attempt(study, "P1")
    extended = researcher_client.post(f"/api/studies/{study.slug}/attempts/{attempt.pk}/extend/", {"minutes": 5},
                                      content_type="application/json")
    assert extended.status_code == 200 and extended.json()["status"] == AttemptStatus.STARTED
    assert (Attempt.objects.get(pk=attempt.pk).deadline - attempt.deadline).total_seconds() == 300
    expired = researcher_client.post(f"/api/studies/{study.slug}/attempts/{attempt.pk}/expire/")
    assert expired.status_code == 200 and expired.json()["status"] == AttemptStatus.EXPIRED
    assert researcher_client.post(f"/api/studies/{study.slug}/attempts/{attempt.pk}/expire/").status_code == 200
    other = make_study(slug="other")
    assert researcher_client.post(f"/api/studies/{other.slug}/attempts/{attempt.pk}/expire/").status_code == 404


def test_writes_need_the_researcher_role(annotator_client, make_study):
    study = make_study(slug="roles-api")
    attempt = started_attempt(study, "P1")
    for url, body in [("/api/studies/", {"slug": "x", "title": "x"}),
                      (f"/api/studies/{study.slug}/attempts/{attempt.pk}/expire/", {})]:
        assert annotator_client.post(url, body, content_type="application/json").status_code == 403
    assert annotator_client.patch(f"/api/studies/{study.slug}/", {"raters": 9},
                                  content_type="application/json").status_code == 403
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.STARTED


def test_list_apis_do_not_query_per_row(researcher_client, make_study):
    """The same number of queries for 1 study / 2 attempts as for 3 studies / 6 attempts."""
    first = make_study(n_items=12, per_participant=2, raters=2, slug="q0")
    for pid in ("a", "b"):
        started_attempt(first, pid)
    urls = ["/api/studies/", f"/api/studies/{first.slug}/", f"/api/studies/{first.slug}/attempts/",
            f"/api/studies/{first.slug}/export/"]
    before = [_count(researcher_client, url) for url in urls]
    for i in (1, 2):
        make_study(n_items=12, per_participant=2, raters=2, slug=f"q{i}")
    for pid in ("c", "d", "e", "f"):
        started_attempt(first, pid)
    assert [_count(researcher_client, url) for url in urls] == before
    assert researcher_client.get("/api/studies/").json()["count"] == 3


def test_schema_generation_has_no_warnings_for_studies_views():
    from django.urls import include, path
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    generator = SchemaGenerator(patterns=[path("api/studies/", include("studies.api_urls"))])
    schema = generator.get_schema(request=None, public=True)
    assert "/api/studies/{slug}/attempts/{id}/extend/" in schema["paths"]
    assert "patch" in schema["paths"]["/api/studies/{slug}/"] and "put" not in schema["paths"]["/api/studies/{slug}/"]
    assert not GENERATOR_STATS, GENERATOR_STATS
