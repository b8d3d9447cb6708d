"""evaluation.admin: an endpoint changed in the admin goes through its edit service, from the version the page was
opened at; a save over a change made since is refused and writes nothing."""
from __future__ import annotations

import re

import pytest

from evaluation.models import ModelEndpoint
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db


def _opened(admin_client, endpoint: ModelEndpoint) -> dict:
    """The change form's fields as the page gives them (inputs, selects, checkboxes), the opened-at version included."""
    response = admin_client.get(f"/admin/evaluation/modelendpoint/{endpoint.pk}/change/")
    form = response.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        elif value is not None:
            data[name] = field.widget.format_value(value) if hasattr(field.widget, "format_value") else value
    (version,) = re.findall(r'<input type="hidden" name="base_version" value="(\d+)"', response.content.decode())
    assert data["base_version"] == version == str(endpoint.version)
    return {name: ("" if value is None else value) for name, value in data.items()}


def test_a_save_over_an_endpoint_changed_since_the_page_was_opened_is_refused(admin_client):
    endpoint = services.endpoint_create(name="admin-edit", base_url="http://127.0.0.1:9/v1", model="stand-in")
    stale = _opened(admin_client, endpoint)
    services.endpoint_update(endpoint=endpoint, expected_version=endpoint.version, max_concurrency=3)
    endpoint.refresh_from_db()
    answer = admin_client.post(f"/admin/evaluation/modelendpoint/{endpoint.pk}/change/", {**stale, "model": "other"})
    assert answer.status_code == 200 and "was changed by someone else" in answer.content.decode()
    endpoint.refresh_from_db()
    assert (endpoint.model, endpoint.max_concurrency, endpoint.version) == ("stand-in", 3, 2)
    fresh = _opened(admin_client, endpoint)
    answer = admin_client.post(f"/admin/evaluation/modelendpoint/{endpoint.pk}/change/", {**fresh, "model": "other"})
    assert answer.status_code == 302, answer.content.decode()[:2000]
    endpoint.refresh_from_db()
    assert (endpoint.model, endpoint.max_concurrency, endpoint.version) == ("other", 3, 3)  # the change kept


def test_an_endpoint_added_in_the_admin_is_validated_and_starts_at_version_1(admin_client):
    page = admin_client.get("/admin/evaluation/modelendpoint/add/")
    assert page.status_code == 200 and 'name="base_version"' in page.content.decode()
    data = {"name": "added", "kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "",
            "max_concurrency": "4", "timeout_s": "60", "max_attempts": "3", "retry_budget_s": "60", "extra_params": "{}",
            "use_cache": "on"}
    answer = admin_client.post("/admin/evaluation/modelendpoint/add/", data)
    assert answer.status_code == 302, answer.context["adminform"].form.errors if answer.context else answer
    endpoint = ModelEndpoint.objects.get(name="added")
    assert (endpoint.version, endpoint.model, endpoint.max_concurrency) == (1, "m", 4)
    refused = admin_client.post("/admin/evaluation/modelendpoint/add/", {**data, "name": "secret",
                                                                          "api_key_env": "SECRET_KEY"})
    assert refused.status_code == 200 and not ModelEndpoint.objects.filter(name="secret").exists()
