"""Every Redis client the apps build themselves (not Celery's broker connection, not Django's cache) opens its
connections without CLIENT SETINFO: a chunk of a model run makes a few such clients (its limiter, the claim of its
items, its heartbeat), and each new connection otherwise sent two more commands (refused by Redis before 7.2) after
redis-py looked its own version up among the installed packages, 2-4 ms each time."""
from __future__ import annotations

import ast
import asyncio

from django.conf import settings

from evaluation.execution import heartbeats
from evaluation.model_calls.limiter import RedisLimiter
from tests.conftest import REPO_DIR
from tests.project.test_architecture import PACKAGES

CONSTRUCTORS = ("from_url", "Redis", "StrictRedis", "ConnectionPool", "BlockingConnectionPool")


def _redis_calls() -> list[tuple[str, int, ast.Call]]:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO_DIR / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            source = path.read_text(encoding="utf-8")
            for node in ast.walk(ast.parse(source)):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in CONSTRUCTORS and "redis" in (ast.get_source_segment(source, node.func) or "").lower():
                    found.append((str(path.relative_to(REPO_DIR)), node.lineno, node))
    return found


def test_every_redis_client_built_in_the_apps_sends_no_client_setinfo():
    calls = _redis_calls()
    assert len(calls) >= 2, calls  # the chunk's claim and heartbeat client, the limiter's pool
    missing = [f"{path}:{line}" for path, line, call in calls
               if not any(k.arg == "driver_info" and isinstance(k.value, ast.Constant) and k.value.value is None
                          for k in call.keywords)]
    assert not missing, f"Redis clients built without driver_info=None: {missing}"


def test_the_clients_a_chunk_opens_are_configured_without_it():
    client = heartbeats.broker_redis()
    assert client is not None, "the tests run with Redis as the broker"
    try:
        assert client.ping() and client.connection_pool.connection_kwargs["driver_info"] is None
    finally:
        client.close()

    async def limiter_pool_kwargs() -> dict:
        limiter = RedisLimiter(redis_url=settings.REDIS_URL, key="setinfo-test", limit=1)
        try:
            async with limiter.slot():
                pass
            return dict(limiter._redis.connection_pool.connection_kwargs)
        finally:
            await limiter.close()

    assert asyncio.run(limiter_pool_kwargs())["driver_info"] is None
