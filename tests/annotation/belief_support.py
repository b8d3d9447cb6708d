"""Helpers of the belief-review tests: labels are recorded through the real service, as the judge does; the trust
page as a researcher reads it."""
from __future__ import annotations

import html
import re

from django.test import Client
from django.urls import reverse

from annotation.models import BeliefLabel
from annotation.services.belief import belief_labels_record

#: A judge's screening verdicts on one item: delete it, for heavy math (criterion 1.2), with a belief per answer.
DELETE_FOR_MATH = {"keep": ("delete", 0.83), "1.1": ("no", 0.9), "1.2": ("yes", 0.77), "1.3": ("no", 0.6),
                   "1.4": ("no", 0.95), "1.5": ("no", 0.99)}


def free_text_row(item, n: int, *, belief: float | None, label: str = "correct", status: str = "scored",
                  version: int | None = None, **over) -> dict:
    row = {
        "item_id": item.pk, "item_version": version or item.version, "task": "free-text", "target": f"result:{n}",
        "aspect": "verdict", "label": label if status == "scored" else "", "choices": ["correct", "incorrect"],
        "payload": {"answer": f"free answer {n}", "matched_option": 0}, "belief": belief,
        "belief_source": "logprob", "status": status, "rationale": f"because {n}", "raw_output": "{}",
        "prompt_hash": "abc123", "producer": "judge-run:1", "tokens": 12, "latency_ms": 30,
    }
    row.update(over)
    return row


def record_free_text(queue, items, beliefs, *, labels=None, start: int = 0) -> int:
    """One free-text label per belief (items reused round-robin), targets result:<start+i>."""
    rows = [free_text_row(items[i % len(items)], start + i, belief=b,
                          label=(labels[i] if labels else "correct"))
            for i, b in enumerate(beliefs)]
    return belief_labels_record(queue=queue, rows=rows)


def graph_draft(queue, item) -> BeliefLabel:
    """A judge's clue-graph draft for the item, recorded as the judge records it."""
    belief_labels_record(queue=queue, rows=[{
        "item_id": item.pk, "item_version": item.version, "task": "clue-graph", "target": f"item:{item.pk}",
        "aspect": "graph", "label": "draft", "choices": ["draft", "edited", "discarded"],
        "payload": {"evidence": "muddy boots by the desk -> someone came from the garden",
                    "multi_hop_reasoning": "someone came from the garden -> The gardener"},
        "belief": 0.7, "belief_source": "verbal", "status": "scored", "producer": "judge-run:3"}])
    return BeliefLabel.objects.get(item=item, task="clue-graph")


def screening_rows(item, verdicts: dict[str, tuple[str, float]], *, version: int | None = None) -> list[dict]:
    choices = {"keep": ["keep", "delete"]}
    return [{"item_id": item.pk, "item_version": version or item.version, "task": "screening",
             "target": f"item:{item.pk}", "aspect": aspect, "label": label,
             "choices": choices.get(aspect, ["yes", "no"]), "belief": belief, "belief_source": "builtin",
             "status": "scored", "rationale": f"{aspect}: {label}", "producer": "judge-run:2"}
            for aspect, (label, belief) in verdicts.items()]


def trust_page(researcher, queue) -> str:
    """The queue's trust page as `researcher` gets it (asserted 200)."""
    client = Client()
    client.force_login(researcher)
    response = client.get(reverse("annotation:belief_trust", args=[queue.name]))
    assert response.status_code == 200
    return response.content.decode()


def words(page: str) -> str:
    """The page's text: tags dropped, entities unescaped, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
