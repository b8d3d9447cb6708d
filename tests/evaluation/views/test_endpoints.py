"""Endpoints are editable by researchers on a page and through PUT / PATCH, validated as on creation; an API
key is never stored or shown (only the name of the variable that holds it); launched runs keep their params."""
import pytest
from django.urls import reverse

from evaluation.models import ModelEndpoint
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db

PASTED_KEY = "sk-proj-Abc123SecretValue"


@pytest.fixture
def endpoint(db):
    return services.endpoint_create(name="vllm", base_url="http://127.0.0.1:9/v1", model="m",
                                    api_key_env="VLLM_KEY", temperature=0.2)


def _form(endpoint, **changes):
    data = {"name": endpoint.name, "kind": endpoint.kind, "base_url": endpoint.base_url, "model": endpoint.model,
            "api_key_env": endpoint.api_key_env, "temperature": endpoint.temperature, "max_concurrency": 4,
            "timeout_s": 30, "max_attempts": 3, "use_cache": "on"}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_the_page_saves_a_valid_edit_and_refuses_a_pasted_key(researcher_client, endpoint, annotator, client):
    url = reverse("evaluation:endpoint_edit", args=[endpoint.pk])
    page = researcher_client.get(url).content.decode()
    assert 'value="VLLM_KEY"' in page and reverse("evaluation:endpoint_edit", args=[endpoint.pk]) in \
        researcher_client.get(reverse("evaluation:endpoint_list")).content.decode()
    saved = researcher_client.post(url, _form(endpoint, name="vllm-2", max_concurrency=16, price_in_per_mtok="1.5"))
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.name, endpoint.max_concurrency, float(endpoint.price_in_per_mtok)) == ("vllm-2", 16, 1.5)
    refused = researcher_client.post(url, _form(endpoint, api_key_env=PASTED_KEY))
    assert refused.status_code == 200 and refused.context["form"].errors.get("api_key_env")
    assert PASTED_KEY not in refused.content.decode()
    assert ModelEndpoint.objects.get(pk=endpoint.pk).api_key_env == "VLLM_KEY"
    bad_kind = researcher_client.post(url, _form(endpoint, kind="builtin", model="gpt-9"))
    assert bad_kind.status_code == 200 and bad_kind.context["form"].errors.get("model")
    assert researcher_client.get(reverse("evaluation:endpoint_edit", args=[999999])).status_code == 404
    client.force_login(annotator)
    assert client.post(url, _form(endpoint, name="x")).status_code == 403
    assert ModelEndpoint.objects.get(pk=endpoint.pk).name == "vllm-2"


def test_patch_and_put_are_validated_and_never_show_a_key(api, endpoint, detectbench_dir):
    url = f"/api/evaluation/endpoints/{endpoint.pk}/"
    patched = api.patch(url, {"max_tokens": 256, "requests_per_minute": 30}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["max_tokens"] == 256 and patched.json()["temperature"] == 0.2
    for body in ({"api_key_env": PASTED_KEY}, {"extra_params": {"api_key": PASTED_KEY}}, {"temperature": 5},
                 {"kind": "openai", "base_url": ""}, {"max_concurrency": 0}, {"name": ""}):
        response = api.patch(url, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert PASTED_KEY not in response.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.api_key_env == "VLLM_KEY" and endpoint.extra_params == {} and endpoint.max_tokens == 256
    put = api.put(url, {"name": "vllm", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m2",
                        "table9_preset": True}, format="json")
    assert put.status_code == 200, put.content
    endpoint.refresh_from_db()
    assert (endpoint.model, endpoint.temperature, endpoint.max_tokens) == ("m2", 0.95, 2000)
    assert api.put(url, {"name": "vllm"}, format="json").status_code == 400  # PUT needs the whole endpoint
    other = services.endpoint_for_cli(builtin="random")
    assert api.patch(url, {"name": other.name}, format="json").status_code == 400  # names are unique
    assert api.delete(url).status_code == 405


def test_runs_launched_before_an_edit_keep_their_parameters(api, endpoint, detectbench_dir):
    from tests.support.items import import_items

    import_items(detectbench_dir / "test.jsonl", split="test", limit=2)
    run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
    assert api.patch(f"/api/evaluation/endpoints/{endpoint.pk}/", {"temperature": 1.0}, format="json").status_code == 200
    run.refresh_from_db()
    assert run.params["temperature"] == 0.2


def test_an_edit_made_from_an_older_version_is_refused_on_the_page_and_in_the_api(researcher_client, endpoint, api):
    """Two researchers open the same endpoint; the second to save gets a conflict, not a silent lost update."""
    url = reverse("evaluation:endpoint_edit", args=[endpoint.pk])
    assert 'name="version" value="1"' in researcher_client.get(url).content.decode()
    first = researcher_client.post(url, _form(endpoint, temperature=0.7, version=1))
    assert first.status_code == 302
    stale = researcher_client.post(url, _form(endpoint, max_concurrency=32, version=1))
    text = stale.content.decode()
    assert stale.status_code == 200 and "changed by someone else" in text and "version 2" in text
    endpoint.refresh_from_db()
    assert (endpoint.temperature, endpoint.max_concurrency, endpoint.version) == (0.7, 4, 2)  # nothing undone

    detail = f"/api/evaluation/endpoints/{endpoint.pk}/"
    assert api.get(detail).json()["version"] == 2
    refused = api.patch(detail, {"max_concurrency": 9, "version": 1}, format="json")
    assert refused.status_code == 409
    assert (refused.json()["code"], refused.json()["version"]) == ("edit_conflict", 2)
    saved = api.patch(detail, {"max_concurrency": 9, "version": 2}, format="json")
    assert saved.status_code == 200 and saved.json()["version"] == 3
    # Without a version the change applies to whatever is there (as before), and still counts.
    assert api.patch(detail, {"max_tokens": 256}, format="json").json()["version"] == 4
    endpoint.refresh_from_db()
    assert (endpoint.max_concurrency, endpoint.max_tokens, endpoint.temperature) == (9, 256, 0.7)
