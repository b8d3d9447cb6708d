"""A database blip: every connection of the test database is terminated (``pg_terminate_backend``) while gunicorn
holds them in Django's connection pool. Pooled connections are checked before a request gets one, and an
idempotent request whose connection dies anyway is answered from a fresh one: no page of any role answers 500.

The server is gunicorn with the pool on (the test settings turn it off for the in-process live servers), as in
production; the requests are those of every role: anonymous, participant, annotator, researcher, superuser and
an API token.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from studies.models import StudyStatus
from studies.services import attempt_start, study_create, study_join
from tests.conftest import REPO_DIR, subprocess_env
from tests.studies.conftest import import_items
from tests.support.faults import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pooled_gunicorn(tmp_path):
    """gunicorn (2 workers x 4 threads) with Django's psycopg pool on, against the test database."""
    port, log = free_port(), tmp_path / "gunicorn.log"
    env = subprocess_env(ALLOWED_HOSTS="127.0.0.1,localhost", DATABASE_POOL="1", DATABASE_POOL_MAX="4", DEBUG="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "detectbench_web.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--threads", "4", "--worker-class", "gthread"],
        cwd=REPO_DIR, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(log.read_text(errors="replace")[-3000:])
        time.sleep(0.3)
    yield url, log
    proc.terminate()
    proc.wait(timeout=20)


def _terminate_backends() -> int:
    """Terminate every other connection to this test database (never another database's)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                       " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def _session_cookie(user) -> dict[str, str]:
    client = Client()
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value}


def test_no_page_of_any_role_answers_500_after_the_database_backends_are_terminated(
        pooled_gunicorn, detectbench_dir, django_user_model):
    assert connection.settings_dict["NAME"].startswith("test_")  # only ever the test database
    url, log = pooled_gunicorn
    ids = import_items(detectbench_dir, 12)
    study = study_create(slug="blip", item_ids=ids, status=StudyStatus.OPEN, per_participant=3, raters=2,
                         time_limit_seconds=900, completion_code="BLIP")
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="BLIP1").pk)
    annotator = django_user_model.objects.create_user("blip-ann", password="x")
    annotator.groups.add(Group.objects.get_or_create(name="annotators")[0])
    researcher = django_user_model.objects.create_user("blip-res", password="x", is_staff=True)
    researcher.groups.add(Group.objects.get_or_create(name="researchers")[0])
    superuser = django_user_model.objects.create_superuser("blip-root", password="x")
    token = Token.objects.create(user=researcher).key
    item = ids[0]
    roles = {
        "anonymous": ({}, {}, ["/accounts/login/", "/", f"/s/{study.slug}/", "/healthz"]),
        "participant": ({}, {}, [f"/s/a/{attempt.token}/", f"/s/{study.slug}/?PROLIFIC_PID=BLIP1"]),
        "annotator": (_session_cookie(annotator), {}, ["/", "/annotation/items/", f"/annotation/items/{item}/",
                                                       "/annotation/queue/"]),
        "researcher": (_session_cookie(researcher), {}, ["/studies/", f"/studies/{study.slug}/",
                                                         f"/studies/{study.slug}/export.json",
                                                         "/evaluation/runs/", "/evaluation/endpoints/"]),
        "superuser": (_session_cookie(superuser), {}, ["/admin/", "/admin/auth/user/", "/studies/"]),
        "api token": ({}, {"Authorization": f"Token {token}"}, ["/api/studies/", "/api/annotation/items/",
                                                                  "/api/evaluation/endpoints/"]),
    }
    requests = [(role, cookies, headers, path) for role, (cookies, headers, paths) in roles.items() for path in paths]

    def fetch(request) -> tuple[str, str, int]:
        role, cookies, headers, path = request
        with httpx.Client(base_url=url, cookies=cookies, headers=headers, timeout=30) as http:
            return role, path, http.get(path).status_code

    with ThreadPoolExecutor(8) as pool:
        # Every page works, and the pool of each gunicorn worker holds several connections.
        warm = list(pool.map(fetch, requests * 2))
        assert all(status < 500 for _, _, status in warm), [w for w in warm if w[2] >= 500]
        killed = _terminate_backends()
        connection.close()
        assert killed >= 2, killed  # the pools' idle connections, at least one per gunicorn worker
        sixty = (requests * 3)[:60]
        assert len(sixty) == 60 and {r[0] for r in sixty} == set(roles)
        seen = list(pool.map(fetch, sixty))
    by_status = Counter(status for _, _, status in seen)
    errors = [(role, path, status) for role, path, status in seen if status >= 500]
    print(f"\n{killed} backends terminated; 60 requests across {len(roles)} roles: {dict(by_status)}")
    assert not errors, (errors, log.read_text(errors="replace")[-3000:])


def test_posts_after_the_backends_are_terminated_get_working_connections_not_a_please_try_again(
        pooled_gunicorn, django_user_model):
    """A POST is never run twice, so only the pool's check stands between it and a dead connection: every one is
    answered as if nothing had happened (a login here; 16 in parallel, over both workers' pools)."""
    url, log = pooled_gunicorn
    users = [django_user_model.objects.create_user(f"blip-post-{i}", password="pw-blip") for i in range(16)]
    clients = [httpx.Client(base_url=url, timeout=30) for _ in users]
    tokens = []
    for http in clients:
        page = http.get("/accounts/login/")
        tokens.append(re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1))
    with connection.cursor() as cursor:
        cursor.execute("SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = current_database()"
                       " AND pid <> pg_backend_pid()")
        pids = cursor.fetchone()[0]
    assert _terminate_backends() >= 2
    deadline = time.monotonic() + 10
    while True:  # the terminated backends are gone (their sockets closed) before the POSTs
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [pids])
            if cursor.fetchone()[0] == 0:
                break
        assert time.monotonic() < deadline
        time.sleep(0.05)

    def log_in(i: int) -> int:
        return clients[i].post("/accounts/login/", data={
            "username": users[i].username, "password": "pw-blip", "csrfmiddlewaretoken": tokens[i]}).status_code

    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(log_in, range(16)))
    for http in clients:
        http.close()
    assert statuses == [302] * 16, (statuses, log.read_text(errors="replace")[-3000:])
