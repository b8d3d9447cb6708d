"""Settings: embedded default, environment-driven PostgreSQL/Redis, and a production deploy check."""
import json
import subprocess
import sys

from tests.conftest import REPO_DIR

PRINT = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.base'); django.setup();"
    "from django.conf import settings as s; d = s.DATABASES['default'];"
    "print(d['ENGINE'], d.get('OPTIONS', {}).get('pool') is not None, s.CELERY_BROKER_URL.split(':')[0],"
    " s.CELERY_TASK_ACKS_LATE, s.CELERY_WORKER_PREFETCH_MULTIPLIER)"
)


def _run(env: dict, *args: str, cwd=REPO_DIR) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env={**base, **env}, capture_output=True,
                          text=True, timeout=60)


def test_embedded_default_needs_no_services(tmp_path):
    out = _run({"VAR_DIR": str(tmp_path), "DEBUG": "1"}, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["django.db.backends.sqlite3", "False", "filesystem", "True", "1"]


def test_database_and_redis_urls_switch_to_postgresql_pool_and_redis(tmp_path):
    env = {"VAR_DIR": str(tmp_path), "DEBUG": "1", "DATABASE_URL": "postgres://u@db:5432/x",
           "REDIS_URL": "redis://r:6379/0"}
    out = _run(env, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["foundation.postgresql", "True", "redis", "True", "1"]


def test_production_settings_pass_check_deploy(tmp_path):
    env = {"VAR_DIR": str(tmp_path), "DEBUG": "0", "SECRET_KEY": "x7!kq2-" + "a9Zr4Lm0Pq" * 6,
           "ALLOWED_HOSTS": "detectbench.example.org"}
    out = _run(env, "manage.py", "check", "--deploy", "--tag", "security", "--fail-level", "WARNING")
    assert out.returncode == 0, out.stdout + out.stderr


def test_production_refuses_to_start_without_secret_key(tmp_path):
    out = _run({"VAR_DIR": str(tmp_path), "DEBUG": "0"}, "manage.py", "check")
    assert out.returncode != 0 and "SECRET_KEY must be set" in out.stderr


def test_no_environment_means_debug_off_and_a_secret_key_is_asked_for(tmp_path):
    out = _run({"VAR_DIR": str(tmp_path)}, "-c", "import detectbench_web.settings.base")
    assert out.returncode != 0
    assert "SECRET_KEY must be set" in out.stderr and "DEBUG=1" in out.stderr
    out = _run({"VAR_DIR": str(tmp_path), "SECRET_KEY": "k" * 50}, "-c",
               "import detectbench_web.settings.base as s; print(s.DEBUG)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_importing_settings_creates_no_folder(tmp_path):
    var = tmp_path / "var-not-yet"
    out = _run({"VAR_DIR": str(var), "DEBUG": "1"}, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert not var.exists()


def test_beat_schedule_is_declared_in_settings_and_names_registered_tasks(tmp_path):
    """Every periodic task is declared in the settings and names a task the worker has (found by autodiscovery),
    so a renamed or removed task cannot leave beat sending messages nobody runs."""
    code = ("import django, json, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'detectbench_web.settings.base');"
            "django.setup(); from detectbench_web.celery import app; app.loader.import_default_modules();"
            "names = sorted(e['task'] for e in app.conf.beat_schedule.values());"
            "print(json.dumps({'scheduled': names, 'unknown': [n for n in names if n not in app.tasks]}))")
    out = _run({"VAR_DIR": str(tmp_path), "DEBUG": "1"}, "-c", code)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["unknown"] == []
    assert {"annotation.tasks.leases_expire_sweep", "evaluation.tasks.reconcile_runs",
            "studies.tasks.sweep_expired_attempts", "studies.tasks.resume_bonus_batches"} <= set(found["scheduled"])


def test_dot_env_file_is_read_and_the_environment_wins(tmp_path):
    """In a copy of the project package with a .env beside it: a .env written into the checkout itself would
    reach every settings import of the tests running meanwhile on the other pytest-xdist worker (it once
    turned DEBUG on under test_no_environment_means_debug_off_and_a_secret_key_is_asked_for)."""
    import shutil

    copy = tmp_path / "project"
    shutil.copytree(REPO_DIR / "detectbench_web", copy / "detectbench_web",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / ".env").write_text("DEBUG=1\nLOG_LEVEL=ERROR\nALLOWED_HOSTS=from-dot-env.example\n")
    code = ("import detectbench_web.settings.base as s; print(s.DEBUG, s.LOGGING['root']['level'], s.ALLOWED_HOSTS,"
            " s.BASE_DIR)")
    out = _run({"VAR_DIR": str(tmp_path / "var"), "LOG_LEVEL": "INFO"}, "-c", code, cwd=copy)
    assert out.returncode == 0, out.stderr
    *values, base_dir = out.stdout.split()
    assert base_dir == str(copy)  # the copy's settings, beside its .env, were the ones read
    assert values == ["True", "INFO", "['from-dot-env.example']"]


def test_every_setting_the_code_reads_is_declared():
    """Every setting read by the project's code (``settings.NAME``, ``getattr(settings, "NAME", default)``), found by
    walking the syntax of every module, exists: declared in detectbench_web/settings/ or one of Django's own, so that
    each can be set from the environment as the README says, not only from a test."""
    import ast

    from django.conf import settings

    read: dict[str, str] = {}
    for package in ("foundation", "annotation", "studies", "evaluation", "detectbench_web"):
        for path in sorted((REPO_DIR / package).rglob("*.py")):
            if "migrations" in path.parts or "settings" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "settings"
                        and node.attr.isupper()):
                    read.setdefault(node.attr, f"{path.relative_to(REPO_DIR)}:{node.lineno}")
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                      and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                      and isinstance(node.args[0], ast.Name) and node.args[0].id == "settings"
                      and isinstance(node.args[1], ast.Constant)):
                    read.setdefault(node.args[1].value, f"{path.relative_to(REPO_DIR)}:{node.lineno}")
    assert len(read) > 30, sorted(read)  # the walk found the code's settings
    missing = {name: where for name, where in read.items() if not hasattr(settings, name)}
    assert missing == {}, f"read but declared nowhere: {missing}"
