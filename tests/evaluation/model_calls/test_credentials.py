"""An endpoint never holds a secret: credentials in its base URL (user part, query) or in its extra parameters
(headers, any value shaped like a key) are refused with a message pointing at the key variable; the key variable
is a name that matches the configured pattern and never one of the app's settings; nothing secret is returned
by the API or shown on a page, not even for an endpoint stored before these rules; and the workers send nothing
to such an endpoint."""
from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import reverse

from evaluation.model_calls.credentials import (
    credential_name,
    key_variable_problem,
    looks_like_key,
    params_credentials,
    url_credentials,
    url_without_credentials,
)
from evaluation.models import ModelEndpoint
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db

KEY = "sk-proj-Zx81Qa0Lr5Tb7Kx2Wm"
GROQ = "gsk_8Hk2Lm9Qp4Rt6Vx1Zc3Bn5"


def _create(api, **fields):
    body = {"name": "e", "kind": "openai", "base_url": "http://127.0.0.1:8116/v1", "model": "m", **fields}
    return api.post("/api/evaluation/endpoints/", body, format="json")


@pytest.mark.parametrize("field, value", [
    ("base_url", f"http://127.0.0.1:8116/v1?api_key={KEY}"),
    ("base_url", f"http://{KEY}@127.0.0.1:8116/v1"),
    ("base_url", "http://admin:hunter2@127.0.0.1:8116/v1"),
    ("base_url", "http://127.0.0.1:8116/v1?key=abcdef"),
    ("base_url", "http://127.0.0.1:8116/v1?token=abcdef"),
    ("base_url", f"http://127.0.0.1:8116/v1/{KEY}"),
    ("extra_params", {"extra_headers": {"Authorization": f"Bearer {KEY}"}}),
    ("extra_params", {"user": KEY}),
    ("extra_params", {"metadata": [{"note": GROQ}]}),
    ("extra_params", {"extra_headers": {"X-Api-Key": "whatever"}}),
    ("extra_params", {"top_k": 5, "stop": [f"Bearer {KEY}"]}),
    ("extra_params", {"extra_query": {"api-key": "abc"}}),
])
def test_credentials_in_the_url_or_the_extra_parameters_are_refused_pointing_at_the_key_variable(api, field, value):
    response = _create(api, **{field: value})
    assert response.status_code == 400, response.content
    body = response.json()
    message = " ".join(body["errors"][field])
    assert "API key variable" in message and "api_key_env" in message, message
    for secret in (KEY, GROQ, "hunter2"):
        assert secret not in response.content.decode()
    assert not ModelEndpoint.objects.filter(name="e").exists()


def test_ordinary_urls_and_parameters_are_kept(api):
    for n, (url, params) in enumerate([
        ("https://example-resource.openai.azure.com/openai/v1?api-version=2024-10-21", {}),
        ("https://router.huggingface.co/hf-inference/v1", {"top_k": 5, "max_completion_tokens": 100}),
        ("http://127.0.0.1:8000/v1", {"stop_token_ids": [2], "chat_template_kwargs": {"enable_thinking": False},
                                      "repetition_penalty": 1.1, "user": "study-42"}),
    ]):
        response = _create(api, name=f"ok {n}", base_url=url, extra_params=params)
        assert response.status_code == 201, (url, response.content)


@pytest.mark.parametrize("name", ["HOME", "VAR_DIR", "PATH", "SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DEBUG",
                                  "STATIC_ROOT", "DJANGO_SECRET_KEY", "PGPASSWORD", "AWS_SECRET_ACCESS_KEY",
                                  "EVALUATION_API_KEY_ENV_PATTERN", "CSRF_COOKIE_SECURE", "GITHUB_TOKEN",
                                  "PROLIFIC_API_TOKEN", "PROLIFIC_WEBHOOK_SECRET"])
def test_a_setting_of_the_app_is_never_a_key_variable(api, name):
    response = _create(api, api_key_env=name)
    assert response.status_code == 400, name
    assert "never sent to a model server" in " ".join(response.json()["errors"]["api_key_env"])


@pytest.mark.parametrize("name, ok", [
    ("OPENAI_API_KEY", True), ("GROQ_KEY", True), ("HF_TOKEN", True), ("VLLM_KEY", True), ("MY_MODEL_API_KEY", True),
    ("MODEL_KEYS", False), ("APIKEY", False), ("MY_VAR", False), ("TOKEN", False), ("openai_api_key", False),
])
def test_the_key_variable_must_match_the_pattern(api, name, ok):
    response = _create(api, name=f"e {name}", api_key_env=name)
    assert (response.status_code == 201) is ok, (name, response.content)
    if not ok and name.isupper():
        assert "_API_KEY, _KEY or _TOKEN" in " ".join(response.json()["errors"]["api_key_env"])


def test_the_pattern_is_a_setting(api):
    with override_settings(EVALUATION_API_KEY_ENV_PATTERN=r"LLM_[A-Z0-9_]+"):
        assert _create(api, name="a", api_key_env="LLM_GROQ").status_code == 201
        assert _create(api, name="b", api_key_env="OPENAI_API_KEY").status_code == 400
        assert _create(api, name="c", api_key_env="LLM_SECRET_KEY_PATTERN_TEST").status_code == 201
        assert _create(api, name="d", api_key_env="LOG_LEVEL").status_code == 400  # a setting's variable


def test_the_endpoint_page_refuses_a_url_with_a_credential_and_never_shows_it(researcher_client):
    response = researcher_client.post(reverse("evaluation:endpoint_list"), {
        "name": "p", "kind": "openai", "base_url": f"http://user:{KEY}@127.0.0.1:8116/v1", "model": "m",
        "max_concurrency": 4, "timeout_s": 10, "max_attempts": 2})
    assert response.status_code == 200 and response.context["form"].errors.get("base_url")
    assert KEY not in response.content.decode()
    assert not ModelEndpoint.objects.filter(name="p").exists()


def test_an_endpoint_stored_with_secrets_before_the_rules_shows_none(api, researcher_client):
    endpoint = services.endpoint_create(name="old", base_url="http://127.0.0.1:8116/v1", model="m",
                                        api_key_env="VLLM_KEY")
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(
        base_url=f"http://u:{KEY}@127.0.0.1:8116/v1?api_key={GROQ}&api-version=1",
        extra_params={"extra_headers": {"Authorization": f"Bearer {KEY}"}, "user": GROQ, "top_k": 5})
    shown = api.get(f"/api/evaluation/endpoints/{endpoint.pk}/")
    listed = api.get("/api/evaluation/endpoints/")
    pages = [researcher_client.get(reverse("evaluation:endpoint_list")),
             researcher_client.get(reverse("evaluation:endpoint_edit", args=[endpoint.pk]))]
    for response in [shown, listed, *pages]:
        assert response.status_code == 200
        text = response.content.decode()
        assert KEY not in text and GROQ not in text and "u:" not in text.split("8116")[0][-10:]
    assert shown.json()["base_url"] == "http://127.0.0.1:8116/v1?api-version=1"
    assert shown.json()["extra_params"] == {"extra_headers": {"Authorization": "REDACTED"}, "user": "REDACTED",
                                            "top_k": 5}


def test_the_workers_send_nothing_to_an_endpoint_stored_with_a_credential_or_a_setting_as_its_key(monkeypatch):
    from evaluation.execution.chunks import endpoint_refusal

    endpoint = services.endpoint_create(name="old", base_url="http://127.0.0.1:8116/v1", model="m",
                                        api_key_env="VLLM_KEY")
    assert endpoint_refusal(endpoint) is None
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=f"http://{KEY}@127.0.0.1:8116/v1")
    endpoint.refresh_from_db()
    assert "credential" in endpoint_refusal(endpoint) and KEY not in endpoint_refusal(endpoint)
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url="http://127.0.0.1:8116/v1", api_key_env="HOME")
    endpoint.refresh_from_db()
    assert "HOME" in endpoint_refusal(endpoint) and "never sent to a model server" in endpoint_refusal(endpoint)


# --- the pure rules ---------------------------------------------------------------------------------------------

def test_key_shapes_and_credential_names():
    for value in (KEY, GROQ, "hf_aB3dE5gH7jK9", "xai-Ab12Cd34Ef56", "Bearer abc.def.ghi", "pplx-0a1b2c3d4e",
                  "AIzaSyA1234567890abcdefghijklmnop", "AKIAIOSFODNN7EXAMPLE", "sk-ant-api03-Xy9"):
        assert looks_like_key(value), value
    for value in ("hf-inference", "task-abc123", "Reply with 1.", "the bearer of news", "gpt-4o-mini", "llama3",
                  "max_tokens", "2024-10-21"):
        assert not looks_like_key(value), value
    for name in ("api_key", "apiKey", "X-Api-Key", "Authorization", "key", "token", "access_token", "client_secret",
                 "password", "Cookie", "api-key", "Ocp-Apim-Subscription-Key"):
        assert credential_name(name), name
    for name in ("max_tokens", "stop_token_ids", "top_k", "user", "logprobs", "api-version", "monkey", "keyword"):
        assert not credential_name(name), name


def test_where_a_credential_is_named_but_never_its_value():
    assert url_credentials(f"http://x:{KEY}@h/v1") == ["its user name or password (user:password@)"]
    assert url_credentials("http://h/v1?api-version=2&key=zz") == ["its query parameter 'key'"]
    assert url_credentials("http://h/v1") == [] and url_credentials("not a url") == []
    assert params_credentials({"a": {"b": [{"c": KEY}]}, "d": 1}) == ["a.b[0].c"]
    assert params_credentials({"extra_headers": {"Authorization": "x"}}) == ["extra_headers.Authorization"]
    assert url_without_credentials(f"https://u:p@h:8/v1/{KEY}?token=t&api-version=2") == \
        "https://h:8/v1/REDACTED?api-version=2"
    assert key_variable_problem(KEY, pattern=".*")[0] == "not_a_name"  # a pasted key: refused, never repeated
    assert KEY not in key_variable_problem(KEY, pattern=".*")[1]
    assert key_variable_problem("OPENAI_API_KEY", pattern=r"[A-Z_]+_KEY", app_names={"SECRET_KEY"}) is None
    assert key_variable_problem("SECRET_KEY", pattern=r"[A-Z_]+_KEY", app_names={"SECRET_KEY"})[0] == "app_setting"


def test_the_launch_check_sends_nothing_to_a_url_with_a_credential():
    from evaluation.model_calls import preflight

    for url in (f"http://{KEY}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?api_key={KEY}"):
        with pytest.raises(preflight.PreflightRefused) as refused:
            preflight.check_endpoint(base_url=url, model="m", timeout_s=1)
        assert refused.value.error_class == "credentials_in_url" and KEY not in refused.value.message
