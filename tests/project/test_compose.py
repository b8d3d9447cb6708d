"""The production stack: docker/Dockerfile and docker/compose.yaml, read as files (no Docker engine
runs here), then each service's own command run with the compose environment against the real
PostgreSQL and Redis: migrate, gunicorn (pages fetched with DEBUG=0), the worker (and its health
check), beat; and `check --deploy` with that environment."""
from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest
import yaml

from tests.conftest import REPO_DIR

DOCKER = REPO_DIR / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = ("migrate", "web", "worker", "beat")
VENV_BIN = Path(sys.executable).parent


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined, out = "", []
    for line in (DOCKER / "Dockerfile").read_text().splitlines():
        if line.strip().startswith("#"):
            continue
        joined += line.rstrip("\\").strip() + " " if line.rstrip().endswith("\\") else line.strip()
        if not line.rstrip().endswith("\\"):
            if joined.strip():
                word, _, rest = joined.strip().partition(" ")
                out.append((word.upper(), rest.strip()))
            joined = ""
    return out


def _dot_env(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def _interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default}, ${VAR:?error} and $$."""
    def one(match):
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op == ":?":
            raise AssertionError(f"compose needs {name}: {arg}")
        return arg or ""
    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value).replace("$$", "$")


def _service_env(service: str, dot_env: dict[str, str]) -> dict[str, str]:
    """What the container sees: the env_file (.env) first, `environment:` over it."""
    spec = SERVICES[service]
    env = dict(dot_env)
    env.update({k: _interpolate(str(v), dot_env) for k, v in (spec.get("environment") or {}).items()})
    return env


# --- the files -------------------------------------------------------------------------

def test_dockerfile_runs_as_a_non_root_user():
    steps = _dockerfile()
    users = [(i, args) for i, (word, args) in enumerate(steps) if word == "USER"]
    assert users, "no USER instruction: the container would run as root"
    last_index, last_user = users[-1]
    assert last_user.split(":")[0] not in {"root", "0"}
    cmd_index = max(i for i, (word, _) in enumerate(steps) if word == "CMD")
    run_indexes = [i for i, (word, _) in enumerate(steps) if word == "RUN"]
    assert max(run_indexes) < last_index < cmd_index  # installs as root, then drops privileges for good
    account = last_user.split(":")[0]
    assert any(word == "RUN" and "useradd" in args and account in args for word, args in steps)


def _collectstatic_step() -> tuple[dict[str, str], list[str]]:
    [run] = [args for word, args in _dockerfile() if word == "RUN" and "collectstatic" in args]
    [segment] = [s for s in run.split("&&") if "collectstatic" in s]
    words = shlex.split(segment)
    env = {}
    while words and re.match(r"^\w+=", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def test_collectstatic_runs_under_production_settings_in_the_build():
    env, command = _collectstatic_step()
    assert env.get("DEBUG") == "0"
    assert env.get("DJANGO_SETTINGS_MODULE", "detectbench_web.settings.base") == "detectbench_web.settings.base"
    assert command[-2:] == ["collectstatic", "--noinput"]
    [run] = [args for word, args in _dockerfile() if word == "RUN" and "collectstatic" in args]
    assert "staticfiles.json" in run  # the build fails when the manifest is missing
    image_env = " ".join(args for word, args in _dockerfile() if word == "ENV")
    assert "STATIC_ROOT=/app/staticfiles" in image_env  # not under var/, where a volume could hide it


def test_the_image_and_compose_start_the_web_server_the_same_way():
    [cmd] = [args for word, args in _dockerfile() if word == "CMD"]
    assert yaml.safe_load(cmd) == SERVICES["web"]["command"]
    assert SERVICES["web"]["command"][:3] == ["gunicorn", "--config", "docker/gunicorn.conf.py"]


def test_every_service_has_a_health_check_or_a_reason_not_to():
    for name in ("postgres", "redis", "web", "worker"):
        assert SERVICES[name].get("healthcheck", {}).get("test"), name
    assert "migrate" in SERVICES and "healthcheck" not in SERVICES["migrate"]  # a job that exits


def test_migrations_finish_before_web_worker_and_beat_start():
    assert SERVICES["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert SERVICES["migrate"]["restart"] == "no"
    assert SERVICES["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("web", "worker", "beat"):
        depends = SERVICES[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["postgres"]["condition"] == depends["redis"]["condition"] == "service_healthy"


def test_there_is_one_beat():
    beat = SERVICES["beat"]
    assert beat["command"][:4] == ["celery", "-A", "detectbench_web", "beat"]
    assert "deploy" not in beat and "scale" not in beat
    assert [n for n, s in SERVICES.items() if "beat" in (s.get("command") or [])] == ["beat"]


def test_data_lives_in_named_volumes():
    volumes = COMPOSE["volumes"]
    assert {"pgdata", "redisdata"} <= set(volumes)
    assert "pgdata:/var/lib/postgresql/data" in SERVICES["postgres"]["volumes"]
    assert "redisdata:/data" in SERVICES["redis"]["volumes"]
    assert "--appendonly" in SERVICES["redis"]["command"]  # queued work survives a Redis restart


def test_environment_comes_from_dot_env():
    template = _dot_env(DOCKER / "env.example")
    assert {"SECRET_KEY", "ALLOWED_HOSTS", "POSTGRES_PASSWORD"} <= set(template)
    for name in APP_SERVICES:
        spec = SERVICES[name]
        assert spec["env_file"] == [{"path": ".env", "required": True}], name
        assert spec["environment"]["DEBUG"] == "0", name
    text = (DOCKER / "compose.yaml").read_text()
    assert "SECRET_KEY" not in text and "change-me" not in text  # no secret written in the compose file
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    assert {".env", ".git", ".venv", "var"} <= set(ignored)


# --- the commands, with the compose environment, against the real services ----------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _admin_url(dbname: str = "postgres") -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/detectbench")
    return base.rsplit("/", 1)[0] + "/" + dbname


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The compose environment (docker/env.example as .env, secrets filled in), pointed at a database
    of this test's own (migrated by the migrate service's command) and the test Redis; static files
    collected by the Dockerfile's own step. The build step and the migrate job do not depend on each
    other, so they run at the same time."""
    tmp = tmp_path_factory.mktemp("compose")
    own_db = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/detectbench").rsplit("/", 1)[1]
    own_db = f"{own_db}_compose{os.environ.get('PYTEST_XDIST_WORKER', '')}"  # one per xdist worker
    dot_env = _dot_env(DOCKER / "env.example")
    dot_env.update(SECRET_KEY="Zq3!v9-compose-test-" + "Lr8Kx2Wm5Tb7" * 4, POSTGRES_PASSWORD="unused-here")
    env = _service_env("web", dot_env)
    assert env["DEBUG"] == "0" and env["DATABASE_URL"].startswith("postgres://detectbench:unused-here@postgres:")
    env.update(
        DATABASE_URL=_admin_url(own_db),  # the real PostgreSQL instead of the compose service name
        REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"),
        STATIC_ROOT=str(tmp / "staticfiles"), VAR_DIR=str(tmp / "var"),
        PATH=f"{VENV_BIN}:/usr/bin:/bin", HOME=str(tmp), PYTHONPATH=str(REPO_DIR),
    )
    with psycopg.connect(_admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{own_db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{own_db}"')
    build_env, build_command = _collectstatic_step()
    build = _start([sys.executable, *build_command[1:]], {**env, **build_env, "STATIC_ROOT": env["STATIC_ROOT"]},
                   tmp / "collectstatic.log")
    migrate = _start(SERVICES["migrate"]["command"], env, tmp / "migrate.log")
    try:
        for proc, log, timeout in ((build, "collectstatic.log", 300), (migrate, "migrate.log", 600)):
            assert proc.wait(timeout=timeout) == 0, (tmp / log).read_text()[-3000:]
    finally:
        _stop(build)
        _stop(migrate)
    assert (tmp / "staticfiles" / "staticfiles.json").stat().st_size > 0
    yield {"env": env, "tmp": tmp, "host": env["ALLOWED_HOSTS"].split(",")[0].strip()}
    with psycopg.connect(_admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{own_db}" WITH (FORCE)')


def _start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=REPO_DIR, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(*procs: subprocess.Popen, signals: dict | None = None) -> None:
    """Signal every process group at once (SIGTERM unless `signals` says otherwise), then wait for them all."""
    running = [proc for proc in procs if proc.poll() is None]
    for proc in running:
        os.killpg(proc.pid, (signals or {}).get(proc, signal.SIGTERM))
    for proc in running:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _get(url: str, host: str) -> tuple[int, dict, str]:
    request = urllib.request.Request(url, headers={"Host": host, "X-Forwarded-Proto": "https"})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture(scope="module")
def services(stack):
    """web (gunicorn), worker and beat started together with their compose commands, and `check --deploy`
    beside them, so that their start-ups overlap; each test below waits for the one it is about."""
    tmp, env = stack["tmp"], stack["env"]
    port = _free_port()
    web_command = [*SERVICES["web"]["command"], "--bind", f"127.0.0.1:{port}"]  # the command line wins over the file
    assert web_command[0] == "gunicorn"
    worker_env = {**env, "HOSTNAME": f"compose-test-{os.getpid()}"}
    worker_command = SERVICES["worker"]["command"] + ["--hostname", f"celery@{worker_env['HOSTNAME']}",
                                                      "--concurrency", "1"]
    beat_command = [part if not part.endswith("celerybeat-schedule") else str(tmp / "celerybeat-schedule")
                    for part in SERVICES["beat"]["command"]]
    check_command = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    procs = {"web": _start(web_command, env, tmp / "web.log"),
             "worker": _start(worker_command, worker_env, tmp / "worker.log"),
             "beat": _start(beat_command, env, tmp / "beat.log"),
             "check": _start(check_command, env, tmp / "check.log")}
    try:
        yield {**stack, "procs": procs, "base": f"http://127.0.0.1:{port}", "worker_env": worker_env}
    finally:
        # gunicorn's quick shutdown (SIGINT): after SIGTERM its master waited up to 10 s for idle workers.
        _stop(*procs.values(), signals={procs["web"]: signal.SIGINT})


def _wait_for_log(services: dict, name: str, text: str, timeout: float) -> str:
    log, proc = services["tmp"] / f"{name}.log", services["procs"][name]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and text not in log.read_text():
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    return log.read_text()


@pytest.fixture(scope="module")
def web(services):
    proc, base = services["procs"]["web"], services["base"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if _get(base + "/healthz", services["host"])[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        pytest.fail("gunicorn did not answer:\n" + (services["tmp"] / "web.log").read_text()[-3000:])
    return services


def test_gunicorn_serves_pages_with_debug_off(web):
    status, headers, html = _get(web["base"] + "/accounts/login/", web["host"])
    assert status == 200, html[-2000:]
    css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', html)
    assert css, "no hashed stylesheet: the static manifest is not in use"
    assert _get(web["base"] + css.group(1), web["host"])[0] == 200
    assert "Content-Security-Policy" in headers and "Strict-Transport-Security" in headers
    status, headers, _ = _get(web["base"] + "/", web["host"])
    assert status == 302 and headers["Location"].startswith("/accounts/login/")
    status, _, html = _get(web["base"] + "/no/such/page/", web["host"])
    assert status == 404 and 'data-status="404"' in html and "Traceback" not in html


def test_gunicorn_refuses_plain_http_and_unknown_hosts(web):
    request = urllib.request.Request(web["base"] + "/accounts/login/", headers={"Host": web["host"]})
    with pytest.raises(urllib.error.HTTPError) as redirect:
        urllib.request.build_opener(_NoRedirect).open(request, timeout=10)
    assert redirect.value.code == 301 and redirect.value.headers["Location"].startswith("https://")
    assert _get(web["base"] + "/accounts/login/", "evil.example.net")[0] == 400


def test_the_web_health_check_passes(web):
    [kind, *command] = SERVICES["web"]["healthcheck"]["test"]
    assert kind == "CMD" and command == ["python", "docker/healthcheck.py"]
    env = {**web["env"], "HEALTHCHECK_URL": web["base"] + "/healthz"}
    done = subprocess.run([sys.executable, *command[1:]], cwd=REPO_DIR, env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr


def test_the_worker_starts_and_its_health_check_answers(services):
    assert "ready." in _wait_for_log(services, "worker", "ready.", 60), "the worker did not become ready"
    kind, shell_command = SERVICES["worker"]["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    check = subprocess.run(["sh", "-c", _interpolate(shell_command, {})], cwd=REPO_DIR, env=services["worker_env"],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "pong" in check.stdout, check.stdout + check.stderr


def test_beat_starts_and_keeps_running(services):
    proc, log = services["procs"]["beat"], services["tmp"] / "beat.log"
    assert "beat: Starting" in _wait_for_log(services, "beat", "beat: Starting", 30), log.read_text()[-3000:]
    time.sleep(2)
    assert proc.poll() is None and "beat: Starting" in log.read_text(), log.read_text()[-3000:]


def test_check_deploy_is_clean_with_the_compose_environment(services):
    returncode = services["procs"]["check"].wait(timeout=180)
    output = (services["tmp"] / "check.log").read_text()
    assert returncode == 0 and "no issues (0 silenced)" in output, output
