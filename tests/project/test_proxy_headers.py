"""X-Forwarded-Proto and X-Forwarded-For are a client's own words unless settings say a proxy in front sets them
(BEHIND_PROXY): only then is a request taken as HTTPS on the proxy's say-so, or a forwarded address counted."""
from __future__ import annotations

import subprocess
import sys

import pytest
from django.test import Client, override_settings

from tests.conftest import REPO_DIR

pytestmark = pytest.mark.django_db

PRINT = ("import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.base');"
         "import django; django.setup(); from django.conf import settings as s;"
         "print(s.BEHIND_PROXY, s.SECURE_PROXY_SSL_HEADER, s.NUM_PROXIES, s.REST_FRAMEWORK['NUM_PROXIES'])")


def _settings(tmp_path, **env: str) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "VAR_DIR": str(tmp_path), "DEBUG": "0",
            "SECRET_KEY": "q8#Vd2!mZ0-proxy-test-" + "Kp4Xw9Lr7Tb3" * 4}
    return subprocess.run([sys.executable, "-c", PRINT], cwd=REPO_DIR, env={**base, **env}, capture_output=True,
                          text=True, timeout=60)


def test_the_proxy_headers_are_honoured_only_behind_a_proxy(tmp_path):
    plain = _settings(tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["False", "None", "0", "0"]
    behind = _settings(tmp_path, BEHIND_PROXY="1")
    assert behind.returncode == 0, behind.stderr
    assert behind.stdout.strip() == "True ('HTTP_X_FORWARDED_PROTO', 'https') 1 1"
    two = _settings(tmp_path, BEHIND_PROXY="1", NUM_PROXIES="2")
    assert two.stdout.split()[-2:] == ["2", "2"]
    contradiction = _settings(tmp_path, NUM_PROXIES="1")
    assert contradiction.returncode != 0 and "BEHIND_PROXY" in contradiction.stderr


def test_a_client_sent_x_forwarded_proto_does_not_make_plain_http_secure(settings):
    assert settings.SECURE_PROXY_SSL_HEADER is None  # the test settings, as any deployment without BEHIND_PROXY
    with override_settings(SECURE_SSL_REDIRECT=True):
        response = Client().get("/healthz", HTTP_X_FORWARDED_PROTO="https")
        assert response.status_code == 301 and response["Location"].startswith("https://")
        with override_settings(BEHIND_PROXY=True, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
            assert Client().get("/healthz", HTTP_X_FORWARDED_PROTO="https").status_code == 200
