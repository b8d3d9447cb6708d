"""Fixtures of the run-execution tests."""
import pytest

from evaluation.execution import heartbeats
from evaluation.execution import recovery as reconcile


@pytest.fixture
def broker():
    """The broker's Redis; the run_chunk messages a test leaves in the queue are removed afterwards."""
    client = reconcile.broker_redis()
    yield client
    for key in heartbeats.queue_keys_in_order():
        for raw in client.lrange(key, 0, -1):
            if heartbeats.chunk_of_message(raw):
                client.lrem(key, 0, raw)
    client.close()
