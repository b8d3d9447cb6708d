"""Throttle counts under concurrency (foundation/rate_log.py): every throttle the project uses, found from the
settings, the API's views and the throttling module, is hammered by threads sending at once, on the shared Redis
cache and on the local-memory cache of `make run`; exactly the rate gets through. With DRF's own get-change-set
counting, requests sent at once drop each other's counts and more get through (on both caches, with the
interpreter switching threads as often as another process would interleave)."""
from __future__ import annotations

import inspect
import socket
import sys
import threading
import time

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.test import RequestFactory, override_settings
from django.utils.module_loading import import_string
from rest_framework.throttling import SimpleRateThrottle

from foundation import rate_log, throttling
from foundation.rate_log import SlidingLog
from tests.support.routes import view_classes

pytestmark = pytest.mark.django_db

LOCAL = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rate-log-test"}}
THREADS, EACH, LIMIT = 16, 3, 7


def _throttles_in_use() -> set[type]:
    """DRF's default classes, every view's own, and every rate throttle the throttling module defines."""
    classes = {import_string(path) for path in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]}
    for view in view_classes():
        classes |= set(getattr(view, "throttle_classes", ()) or ())
    classes |= {value for value in vars(throttling).values()
                if inspect.isclass(value) and issubclass(value, SimpleRateThrottle)
                and value.__module__ == throttling.__name__}
    return {cls for cls in classes if getattr(cls, "scope", None)}  # a base without a scope counts nothing itself


def test_the_discovery_finds_the_throttles_it_guards():
    found = _throttles_in_use()
    assert {throttling.AnonRateThrottle, throttling.UserRateThrottle, throttling.TokenFailureThrottle,
            throttling.JoinThrottle} <= found
    assert all(issubclass(cls, throttling.AtomicRateThrottle) for cls in found), found
    assert throttling.AtomicRateThrottle not in found


def _throttle(cls: type, limit: int):
    throttle = cls()
    throttle.rate = f"{limit}/minute"
    throttle.num_requests, throttle.duration = throttle.parse_rate(throttle.rate)
    return throttle


def _hammer(call, threads: int = THREADS) -> list:
    """`call()` from `threads` threads released at the same instant, EACH times each; the results. The interpreter
    switches threads every microsecond meanwhile, so that a read-change-write in Python is interrupted as it would
    be by another process (with the default 5 ms the GIL hides the race of an in-process cache)."""
    results, errors, lock, go = [], [], threading.Lock(), threading.Barrier(threads)

    def worker() -> None:
        try:
            go.wait(timeout=30)
            for _ in range(EACH):
                outcome = call()
                with lock:
                    results.append(outcome)
        except Exception as error:  # noqa: BLE001 - reported below, not a warning of pytest's
            errors.append(repr(error))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=worker) for _ in range(threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors and len(results) == threads * EACH, (errors[:3], len(results))
    return results


@pytest.fixture(params=["redis", "local-memory"])
def backend(request):
    if request.param == "local-memory":
        with override_settings(CACHES=LOCAL):
            yield request.param
        return
    assert isinstance(caches["default"], RedisCache), "the suite runs with Redis as the shared cache (REDIS_URL)"
    yield request.param


@pytest.mark.parametrize("cls", sorted(_throttles_in_use(), key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_throttle_lets_exactly_its_rate_through_requests_sent_at_once(cls, backend, django_user_model):
    user = django_user_model.objects.create_user(f"hammer-{cls.__name__}-{backend}"[:150], password="x")
    request = RequestFactory().get("/", REMOTE_ADDR=f"192.0.2.{len(cls.__name__)}")
    request.user = user
    if _throttle(cls, LIMIT).get_cache_key(request, None) is None:  # counts anonymous requests only
        request.user = AnonymousUser()
    counted = _throttle(cls, LIMIT)
    counted.key = counted.get_cache_key(request, None)
    # Both keys: DRF's, and the log's own (`rate_log:` + it), which an earlier test's requests by a user with the
    # same id (ids start again after a flushed table) may have filled within the window.
    cache.delete_many([counted.key, counted.log().key])
    if cls is throttling.TokenFailureThrottle:  # only failures count: each a record, then whether it is blocked
        limit = THREADS * EACH + 2
        _hammer(lambda: _throttle(cls, limit).record_failure(request))
        assert _throttle(cls, limit).wait_if_blocked(request) is None  # 48 of 50: every failure counted ...
        _throttle(cls, limit).record_failure(request)
        assert _throttle(cls, limit).wait_if_blocked(request) is None
        _throttle(cls, limit).record_failure(request)
        assert _throttle(cls, limit).wait_if_blocked(request) >= 1  # ... so the 50th blocks
        return
    allowed = _hammer(lambda: _throttle(cls, LIMIT).allow_request(request, None))
    assert allowed.count(True) == LIMIT, f"{allowed.count(True)} of {len(allowed)} allowed, the rate is {LIMIT}"
    refused = _throttle(cls, LIMIT)
    assert not refused.allow_request(request, None) and 0 < refused.wait() <= 60


def test_a_log_forgets_what_left_its_window_and_says_how_long_to_wait(backend):
    log = SlidingLog(cache, f"window-{backend}", window=10, limit=3)
    cache.delete(log.key)
    start = time.time()
    assert [log.try_add(start + t)[0] for t in (0, 1, 2, 3)] == [True, True, True, False]
    assert log.try_add(start + 3)[1] == pytest.approx(7, abs=1e-3)  # the oldest (t=0) leaves at 10
    assert log.wait(start + 9.5) == pytest.approx(0.5, abs=1e-3)
    assert log.try_add(start + 10.5) == (True, None)  # t=0 left the window
    assert log.wait(start + 10.6) == pytest.approx(0.4, abs=1e-3)  # now t=1, 2, 10.5: t=1 leaves at 11
    log.add(start + 10.7)  # counted whatever the count: the newest 3 are kept (2, 10.5, 10.7)
    assert log.wait(start + 10.8) == pytest.approx(1.2, abs=1e-3)
    assert log.wait(start + 30) is None


def test_the_log_never_meets_drfs_own_list_and_a_stranger_at_its_key_is_no_error(backend):
    """A process still counting as DRF does (a deploy in progress, a rollback) keeps its list under the throttle's
    key; the log has its own key. A value of another kind at the log's key is dropped (Redis) or ignored."""
    key = f"throttle_user_legacy-{backend}"
    cache.set(key, [time.time()] * 5, 60)  # what DRF's SimpleRateThrottle keeps there
    log = SlidingLog(cache, key, window=60, limit=3)
    cache.delete(log.key)
    assert log.try_add(time.time()) == (True, None)  # DRF's five are not the log's
    assert cache.get(key) is not None and len(cache.get(key)) == 5  # and DRF's list is still a list DRF can read
    cache.set(log.key, "not a log", 60)
    assert log.wait(time.time()) is None and log.try_add(time.time()) == (True, None)


def test_a_rate_of_nothing_refuses_everything(backend):
    log = SlidingLog(cache, f"nothing-{backend}", window=60, limit=0)
    assert log.try_add(time.time()) == (False, 60.0)


def test_the_user_model_is_the_one_the_user_throttle_counts():
    assert get_user_model()._meta.pk.name == "id"  # UserRateThrottle keys by request.user.pk


def test_a_redis_that_lost_the_script_gets_it_again():
    """Redis restarted or its scripts flushed: the next count loads the script again, no error."""
    log = SlidingLog(cache, "flushed", window=60, limit=2)
    cache.delete(log.key)
    assert log.try_add(time.time()) == (True, None)
    rate_log._script.sha = "0" * 40  # as after a restart of Redis: no script by that name (NOSCRIPT)
    assert log.try_add(time.time()) == (True, None)
    assert log.try_add(time.time())[0] is False



def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when this returns: nothing listens there


def test_with_redis_unreachable_the_throttles_let_requests_through_and_say_so(detectbench_dir, caplog,
                                                                               django_user_model):
    """Redis down (a restart, a blip): a participant still joins and an API token still works, uncounted, with a
    warning in the log, where a throttle that raised made the join page a 500 until Redis came back."""
    from django.test import Client
    from django.urls import reverse
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from annotation.models import Item
    from studies.models import Attempt, StudyStatus
    from studies.services import study_create
    from tests.support.items import import_items

    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)
    study = study_create(slug="redis-down", item_ids=list(Item.objects.values_list("pk", flat=True)),
                         status=StudyStatus.OPEN, per_participant=3, raters=2, completion_code="C")
    user = django_user_model.objects.create_user("redis-down", password="x")
    token = Token.objects.create(user=user).key
    unreachable = {"default": {"BACKEND": "foundation.redis_cache.RedisCache",
                               "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0"}}
    with override_settings(CACHES=unreachable), caplog.at_level("WARNING", logger="foundation.rate_log"):
        assert isinstance(caches["default"], RedisCache)
        joined = Client(REMOTE_ADDR="192.0.2.77").post(
            reverse("studies_public:join", args=[study.slug]),
            {"consent": "yes", "PROLIFIC_PID": "redis-down", "STUDY_ID": "S", "SESSION_ID": "s"})
        api = APIClient(REMOTE_ADDR="192.0.2.78")
        api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        listed = api.get(reverse("studies_api:study_list"))
        wrong = APIClient(REMOTE_ADDR="192.0.2.78")
        wrong.credentials(HTTP_AUTHORIZATION="Token " + "e" * 40)
        refused = wrong.get(reverse("studies_api:study_list"))
    assert joined.status_code == 302, joined.status_code
    assert Attempt.objects.filter(study=study, external_participant_id="redis-down").count() == 1
    assert listed.status_code in (200, 403), listed.status_code  # the user's role decides, not a failing throttle
    assert refused.status_code == 401, refused.status_code  # a wrong token is still refused
    warned = [record.getMessage() for record in caplog.records if "Redis unreachable" in record.getMessage()]
    assert len(warned) >= 4, warned  # the join, the API's two rates, the wrong token's failure


def test_a_redis_that_never_answers_costs_a_throttled_request_its_timeout_not_minutes(caplog):
    """A partition that drops Redis' packets: the connection is made (a listener that never answers stands in for
    it) and nothing comes back. The settings bound every cache call, so the throttle lets the request through after
    that bound instead of holding the web worker for the system's TCP timeout."""
    assert 0 < settings.CACHES["default"]["OPTIONS"]["socket_timeout"] <= 5
    assert 0 < settings.CACHES["default"]["OPTIONS"]["socket_connect_timeout"] <= 5
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        silent_cache = {"default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{silent.getsockname()[1]}/0",
                                    "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
        with override_settings(CACHES=silent_cache), caplog.at_level("WARNING", logger="foundation.rate_log"):
            began = time.monotonic()
            allowed = SlidingLog(cache, "silent", window=60, limit=1).try_add(time.time())
            took = time.monotonic() - began
    assert allowed == (True, None) and took < 3, took
    assert any("Redis unreachable" in record.getMessage() for record in caplog.records)
