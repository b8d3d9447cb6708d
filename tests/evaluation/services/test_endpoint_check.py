"""The endpoint forms (create and edit) test the connection with the settings typed so far, as a launch checks an
endpoint (htmx, nothing saved): connected with the model served, a warning for a key variable not set here, the
reason when it cannot serve a run (unreachable, unknown model, a credential in the URL); built-ins need none."""
import socket

import pytest
from django.urls import reverse

from evaluation.models import ModelEndpoint
from tests.evaluation.stand_in import StandIn
from tests.support.page_text import visible_text

pytestmark = pytest.mark.django_db(transaction=True)

URL = reverse("evaluation:endpoint_check")


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _check(client, **fields) -> str:
    response = client.post(URL, {"kind": "openai", **fields}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="connection-result"') and "<html" not in html
    return visible_text(html)


def test_both_endpoint_forms_have_the_button(researcher_client):
    endpoint = ModelEndpoint.objects.create(name="e", base_url="http://127.0.0.1:9/v1", model="m")
    for url in (reverse("evaluation:endpoint_list"), reverse("evaluation:endpoint_edit", args=[endpoint.pk])):
        html = researcher_client.get(url).content.decode()
        assert f'id="test-connection" hx-post="{URL}"' in html and 'id="connection-result"' in html
        # The button is inside the form, so htmx sends the form's fields with it.
        form = html[html.rindex("<form", 0, html.index('id="test-connection"')):]
        assert form.index('id="test-connection"') < form.index("</form>")


def test_a_live_endpoint_is_connected_and_nothing_is_saved(researcher_client, monkeypatch):
    monkeypatch.delenv("CHECK_NO_SUCH_KEY", raising=False)
    with StandIn(reply="1", models=("stand-in", "other")) as server:
        text = _check(researcher_client, name="new", base_url=server.base_url, model="stand-in",
                      api_key_env="CHECK_NO_SUCH_KEY")
        unknown = _check(researcher_client, base_url=server.base_url, model="gpt-9")
    assert f"Connected: {server.base_url} serves stand-in (among 2 model(s))." in text
    assert "the API-key variable CHECK_NO_SUCH_KEY is not set in this process" in text
    assert "Not connected" in unknown and "unknown model 'gpt-9'" in unknown and "stand-in, other" in unknown
    assert not ModelEndpoint.objects.exists()


def test_what_cannot_serve_a_run_is_said(researcher_client):
    dead = _check(researcher_client, base_url=_dead_url(), model="m")
    assert "Not connected" in dead and "cannot reach" in dead
    assert "Give the model to test." in _check(researcher_client, base_url=_dead_url())
    pasted = _check(researcher_client, base_url="http://127.0.0.1:9/v1", model="m", api_key_env="sk-abc123secretkey")
    assert "Not connected" in pasted and "sk-abc123secretkey" not in pasted
    credentials = _check(researcher_client, base_url="http://user:hunter2@127.0.0.1:9/v1", model="m")
    assert "credential" in credentials and "hunter2" not in credentials
    builtin = _check(researcher_client, kind="builtin", model="lexical")
    assert "A built-in model: it needs no connection." in builtin


def test_only_researchers_may_test_and_only_by_post(annotator, researcher_client):
    from django.test import Client

    annotator_client = Client()
    annotator_client.force_login(annotator)
    assert annotator_client.post(URL, {"model": "m"}).status_code in (302, 403)
    assert researcher_client.get(URL).status_code == 405
