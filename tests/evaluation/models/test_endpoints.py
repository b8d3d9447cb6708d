"""An endpoint's bounds (evaluation.models.endpoints): a price below zero made costs negative, max_tokens 0 was sent to
the server, and max_attempts 0 was refused by a database constraint's message naming no field."""
import pytest
from django.urls import reverse

from evaluation.models import ModelEndpoint

pytestmark = pytest.mark.django_db

BASE = {"name": "bounds", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}


@pytest.mark.parametrize(("field", "value"), [("price_in_per_mtok", "-100"), ("price_out_per_mtok", "-0.0001"),
                                              ("max_tokens", 0), ("max_attempts", 0)])
def test_a_value_out_of_bounds_is_refused_on_its_field_by_the_api_and_the_form(api, researcher_client, field, value):
    response = api.post("/api/evaluation/endpoints/", {**BASE, field: value}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    page = researcher_client.post(reverse("evaluation:endpoint_list"), {
        **BASE, field: value, "max_concurrency": 8, "timeout_s": 120, "retry_budget_s": 600,
        **({"max_attempts": 6} if field != "max_attempts" else {}), "extra_params": "{}"})
    assert page.status_code == 200 and not ModelEndpoint.objects.filter(name="bounds").exists()
    assert field in page.context["form"].errors, page.context["form"].errors


@pytest.mark.parametrize(("field", "value"), [("price_in_per_mtok", "0"), ("max_tokens", 1), ("max_attempts", 1)])
def test_the_bounds_themselves_are_taken(api, field, value):
    assert api.post("/api/evaluation/endpoints/", {**BASE, field: value}, format="json").status_code == 201


def test_the_schema_says_the_bounds():
    from drf_spectacular.generators import SchemaGenerator

    fields = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]["Endpoint"][
        "properties"]
    assert fields["max_attempts"]["minimum"] == 1 and fields["max_tokens"]["minimum"] == 1
