"""Settings: embedded default, environment-driven PostgreSQL/Redis, and a production deploy check."""
import subprocess
import sys

from tests.conftest import REPO_DIR

PRINT = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.base'); django.setup();"
    "from django.conf import settings as s; d = s.DATABASES['default'];"
    "print(d['ENGINE'], d.get('OPTIONS', {}).get('pool') is not None, s.CELERY_BROKER_URL.split(':')[0],"
    " s.CELERY_TASK_ACKS_LATE, s.CELERY_WORKER_PREFETCH_MULTIPLIER)"
)


def _run(env: dict, *args: str) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    return subprocess.run([sys.executable, *args], cwd=REPO_DIR, env={**base, **env}, capture_output=True,
                          text=True, timeout=60)


def test_embedded_default_needs_no_services(tmp_path):
    out = _run({"VAR_DIR": str(tmp_path)}, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["django.db.backends.sqlite3", "False", "filesystem", "True", "1"]


def test_database_and_redis_urls_switch_to_postgresql_pool_and_redis(tmp_path):
    env = {"VAR_DIR": str(tmp_path), "DATABASE_URL": "postgres://u@db:5432/x", "REDIS_URL": "redis://r:6379/0"}
    out = _run(env, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["django.db.backends.postgresql", "True", "redis", "True", "1"]


def test_production_settings_pass_check_deploy(tmp_path):
    env = {"VAR_DIR": str(tmp_path), "DEBUG": "0", "SECRET_KEY": "x7!kq2-" + "a9Zr4Lm0Pq" * 6,
           "ALLOWED_HOSTS": "detectbench.example.org"}
    out = _run(env, "manage.py", "check", "--deploy", "--tag", "security", "--fail-level", "WARNING")
    assert out.returncode == 0, out.stdout + out.stderr


def test_production_refuses_to_start_without_secret_key(tmp_path):
    out = _run({"VAR_DIR": str(tmp_path), "DEBUG": "0"}, "manage.py", "check")
    assert out.returncode != 0 and "SECRET_KEY must be set" in out.stderr
