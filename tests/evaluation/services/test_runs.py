"""Bad input to the researcher forms, API and command gives field errors (400 / form errors), never a 500."""
import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation.errors import UnknownMethod
from evaluation.models import ModelEndpoint, Run
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db

HUGE = 10**12


def named_fields(body: dict) -> set[str]:
    """The fields a 400 names: serializer errors by key, a refused service call in "field" / "errors"."""
    return set(body) | set(body.get("errors") or {}) | {body.get("field")}


@pytest.fixture
def test_items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=5)


@pytest.fixture
def endpoint(db):
    return services.endpoint_for_cli(builtin="first-option")


@pytest.mark.parametrize("field, value", [
    ("seed", HUGE), ("seed", -HUGE), ("limit", -1), ("limit", 0), ("limit", HUGE), ("chunk_size", HUGE),
    ("chunk_size", 0), ("k", 10**6), ("samples", 0), ("method", "no-such-method"), ("ids", [HUGE]),
    ("ids", [-1]), ("split", "x" * 500), ("option_order", "shuffled"), ("endpoint", 999999),
])
def test_api_launch_rejects_bad_fields_by_name(api, test_items, endpoint, field, value):
    body = {"endpoint": endpoint.pk, "method": "naive", "split": "test", field: value}
    response = api.post("/api/evaluation/runs/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Run.objects.exists()


def test_api_launch_bad_json_and_empty_selection(api, test_items, endpoint):
    response = api.post("/api/evaluation/runs/", "{not json", content_type="application/json")
    assert response.status_code == 400
    response = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive", "split": "nope"},
                        format="json")
    assert response.status_code == 400 and response.json()["code"] == "empty_selection"
    assert "No items" in response.json()["detail"]


def test_api_refused_launch_is_a_400_with_its_code(api, test_items, endpoint):
    """A few-shot method without train items: the service refuses, the API answers 400 (never 500)."""
    response = api.post("/api/evaluation/runs/", {"endpoint": endpoint.pk, "method": "naive-3shot", "split": "test"},
                        format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "no_demonstrations" and body["field"] == "method" and "train" in body["detail"]
    assert not Run.objects.exists()


def test_launch_page_shows_a_refused_selection(researcher_client, test_items, endpoint):
    response = researcher_client.post(reverse("evaluation:run_launch"), {
        "endpoint": endpoint.pk, "methods": ["naive"], "split": "nope", "seed": 1, "samples": 1,
        "option_order": "original"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == ["No items match this selection."]


def test_endpoint_page_shows_model_validation_beside_its_field(researcher_client):
    response = researcher_client.post(reverse("evaluation:endpoint_list"), {
        "name": "e", "kind": "builtin", "model": "gpt-9", "max_concurrency": 4, "timeout_s": 10, "max_attempts": 2})
    assert response.status_code == 200
    assert response.context["form"].errors.get("model"), response.context["form"].errors
    assert not ModelEndpoint.objects.filter(name="e").exists()


def test_evaluate_command_reports_a_refused_launch(test_items):
    with pytest.raises(CommandError, match="No items match"):
        call_command("evaluate", "--builtin", "first-option", "--split", "nope", stdout=io.StringIO())


@pytest.mark.parametrize("field, value", [
    ("extra_params", [1, 2]), ("extra_params", "x"), ("requests_per_minute", 0), ("temperature", -1),
    ("top_p", 1.5), ("max_concurrency", 0), ("max_concurrency", HUGE), ("timeout_s", -5),
    ("api_key_env", "sk-proj-abc123"), ("api_key_env", "gsk_abc123XYZ789def456"),
    ("extra_params", {"api_key": "sk-secret-123"}), ("extra_params", {"headers": 1, "Authorization": "Bearer x"}),
])
def test_api_endpoint_rejects_bad_fields_by_name(api, field, value):
    body = {"name": "e", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", field: value}
    response = api.post("/api/evaluation/endpoints/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in named_fields(response.json()), response.json()
    assert not ModelEndpoint.objects.filter(name="e").exists()
    assert "secret-123" not in response.content.decode()
    if field == "api_key_env":
        assert value not in response.content.decode()


def test_endpoint_keeps_ordinary_extra_params(api):
    body = {"name": "e", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
            "extra_params": {"top_k": 5, "max_completion_tokens": 100}}
    assert api.post("/api/evaluation/endpoints/", body, format="json").status_code == 201


@pytest.mark.parametrize("field, value", [
    ("seed", str(HUGE)), ("limit", "-3"), ("ids", "1,99999999999999"), ("ids", "-4"), ("ids", "1,x"),
    ("split", "x" * 500), ("k", "100000"),
])
def test_launch_form_shows_field_errors(researcher_client, test_items, endpoint, field, value):
    data = {"endpoint": endpoint.pk, "methods": ["naive"], "split": "test", "seed": 1, "samples": 1,
            "option_order": "original", field: value}
    response = researcher_client.post(reverse("evaluation:run_launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors.get(field), response.context["form"].errors
    assert not Run.objects.exists()


def test_launch_of_several_methods_is_all_or_nothing(researcher_client, test_items, endpoint):
    # naive-3shot needs a train split, which is not imported: neither run may be created.
    response = researcher_client.post(reverse("evaluation:run_launch"), {
        "endpoint": endpoint.pk, "methods": ["naive", "naive-3shot"], "split": "test", "seed": 1, "samples": 1,
        "option_order": "original"})
    assert response.status_code == 200 and "demonstrations" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize("args", [["--limit", "-5"], ["--limit", "0"], ["--concurrency", "0"],
                                  ["--concurrency", "-2"], ["--samples", "0"], ["--k", "0"], ["--chunk-size", "0"]])
def test_evaluate_command_refuses_non_positive_numbers(test_items, args):
    with pytest.raises(CommandError):
        call_command("evaluate", "--builtin", "first-option", "--split", "test", *args, stdout=io.StringIO())
    assert not Run.objects.exists()


def test_run_method_is_checked_against_the_registry(test_items, endpoint):
    """Run.method has no choices: the registry is the list, in Run.clean() and in the launch service."""
    run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False)
    run.method = "naive-2shot"
    with pytest.raises(ValidationError) as refused:
        run.full_clean()
    assert "method" in refused.value.message_dict
    with pytest.raises(UnknownMethod) as refused:
        services.run_launch(endpoint=endpoint, method="naive-2shot", split="test", enqueue=False)
    assert refused.value.field == "method" and refused.value.http_status == 400
    assert Run.objects.count() == 1
