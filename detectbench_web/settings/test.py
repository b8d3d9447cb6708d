"""Settings for the test suite: the real PostgreSQL and Redis (see Makefile `test`)."""
import os

# Unless told otherwise, each test run has databases of its own (the run's process id in the PostgreSQL name,
# a Redis database picked from it), so two runs on one machine never drop or flush each other's data. Child
# processes (servers, Celery workers) inherit the names through the environment set here.
# pytest-xdist's workers share their run's id (PYTEST_XDIST_TESTRUNUID), so they derive the same names.
_run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
_run_number = int(__import__("hashlib").sha256(_run.encode()).hexdigest()[:8], 16)
if "DATABASE_URL" not in os.environ:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/detectbench_{_run_number % 10**6}"
if "REDIS_URL" not in os.environ:
    os.environ["REDIS_URL"] = f"redis://127.0.0.1:6379/{3 + (_run_number % 7) * 2}"
os.environ.setdefault("DEBUG", "0")
# Without a pool, the threads of live servers close their connections, so the test
# database can be dropped at the end; subprocess servers in benchmarks turn it back on.
os.environ.setdefault("DATABASE_POOL", "0")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-0123456789abcdef")
os.environ.setdefault("SECURE_COOKIES", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
# The stand-in model servers listen on this machine: endpoints may reach loopback (nothing else that is not public).
os.environ.setdefault("EVALUATION_ENDPOINT_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
# Every test's participants join from 127.0.0.1 within one session: the join throttle's tests set their own rate.
os.environ.setdefault("STUDY_JOIN_RATE_PER_ADDRESS", "100000/hour")

# Under pytest-xdist (`make test` runs two workers, gw0 and gw1) each worker has its own test database
# (pytest-django adds _gw0/_gw1 to its name) and its own Redis database: REDIS_URL's number for gw0, one
# less for gw1 (an odd number from 3 to 15 and the even one below it), so one worker's broker flush, queued tasks and cache keys never
# reach the other. Child processes (Celery workers, servers) inherit the rewritten REDIS_URL; the marker
# keeps them from moving it again.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_worker.startswith("gw") and os.environ.get("TEST_REDIS_WORKER") != _xdist_worker:
    from urllib.parse import urlsplit, urlunsplit

    _url = urlsplit(os.environ["REDIS_URL"])
    _db = (int(_url.path.strip("/") or 0) - int(_xdist_worker[2:])) % 16
    os.environ["REDIS_URL"] = urlunsplit(_url._replace(path=f"/{_db}"))
    os.environ["TEST_REDIS_WORKER"] = _xdist_worker

from detectbench_web.settings.base import *  # noqa: E402,F401,F403

# Django's PostgreSQL backend with emptying by DELETE instead of TRUNCATE after transactional tests
# (tests/support/pg_backend says why), and commits that do not wait for the WAL to reach the disk
# (synchronous_commit=off: only a crash of PostgreSQL could lose the last commits of a test database).
if DATABASES["default"]["ENGINE"] == "foundation.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.support.pg_backend"  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c synchronous_commit=off"  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
