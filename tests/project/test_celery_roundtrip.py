"""A real Celery worker, against the real Redis broker, runs a task that writes to the database."""
import json
import time

import pytest

from annotation.models import Item
from annotation.services import item_import_text
from annotation.tasks import item_refresh_facts


@pytest.mark.django_db(transaction=True)
def test_worker_round_trips_a_task_that_writes(celery_worker):
    item_import_text(text=json.dumps({
        "id": 1, "context": "One two three four.", "question": "Why?", "options": ["a", "b"], "answer": 0,
        "clue_graph": {"evidence": "x -> y", "multi_hop_reasoning": "y -> a"}}) + "\n",
        file_name="f.jsonl", source="c", split="dev")
    Item.objects.update(question_type="other", context_words=0)  # stale facts for the task to fix

    item_refresh_facts.delay(Item.objects.get().pk)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        item = Item.objects.get()
        if item.context_words:
            break
        time.sleep(0.2)
    assert (item.question_type, item.context_words) == ("why", 4)
    assert "item_refresh_facts" in celery_worker.log.read_text()
