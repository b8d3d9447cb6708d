"""`manage.py check --deploy` under production settings (DEBUG=0, a real SECRET_KEY) reports nothing:
no security warning and no API-schema warning (drf_spectacular.W001/W002 come from the schema)."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_DIR

PRODUCTION_ENV = {
    "PATH": "/usr/bin:/bin", "HOME": "/tmp", "DEBUG": "0",
    "SECRET_KEY": "q8#Vd2!mZ0-production-like-" + "Kp4Xw9Lr7Tb3" * 4,
    "ALLOWED_HOSTS": "detectbench.example.org",
}


def _check(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**PRODUCTION_ENV, "VAR_DIR": str(tmp_path)}
    return subprocess.run([sys.executable, "manage.py", "check", *args], cwd=REPO_DIR, env=env,
                          capture_output=True, text=True, timeout=180)


def test_check_deploy_prints_no_warning_at_all(tmp_path):
    out = _check(tmp_path, "--deploy", "--fail-level", "WARNING")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "System check identified no issues (0 silenced)." in text, text
    assert "WARNINGS" not in text


def test_nothing_is_silenced_to_get_there(tmp_path):
    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.base');"
            "django.setup(); from django.conf import settings as s;"
            "print(s.SILENCED_SYSTEM_CHECKS, s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE,"
            " s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS >= 31536000)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, env={**PRODUCTION_ENV, "VAR_DIR": str(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False", "True", "True", "True", "True"]
