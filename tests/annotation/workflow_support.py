"""Helpers shared by the annotation tests: items to work on, logged-in clients, the forms' POST data."""
from __future__ import annotations

import json

from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Item, ItemStatus, StageConfig
from tests.support.items import import_text

CONTEXT = ("On a snowy winter night the butler found the study door locked from inside. "
           "The window was open and muddy boots stood by the desk. The gardener had a key to the study.")


def record(i: int, **over) -> dict:
    r = {
        "id": i,
        "context": CONTEXT,
        "question": f"Who entered the study? ({i})",
        "options": ["The gardener", "The butler", "The cook", "Nobody"],
        "answer": 0,
        "clue_graph": {
            "evidence": "muddy boots stood by the desk -> someone came in from the garden\n"
                        "The gardener had a key to the study -> the gardener could lock the door\n"
                        "the night was blustery and snowy -> tracks would show",
            "multi_hop_reasoning": "After correlating the clues we get:\n"
                                   "someone came in from the garden + the gardener could lock the door -> The gardener",
        },
    }
    r.update(over)
    return r


def make_items(n: int, *, status: str = ItemStatus.VERIFICATION, source: str = "t", start: int = 1) -> list[Item]:
    text = "\n".join(json.dumps(record(i)) for i in range(start, start + n)) + "\n"
    import_text(text, file_name="t.jsonl", source=source, split="test")
    items = Item.objects.filter(source=source, external_id__in=[str(i) for i in range(start, start + n)])
    items.update(status=status)
    return list(items.order_by("pk"))


def set_k(stage: str, k: int, lease_minutes: int = 30) -> None:
    StageConfig.objects.update_or_create(stage=stage, defaults={"annotators_required": k,
                                                                "lease_minutes": lease_minutes})


def client_for(user) -> Client:
    """A browser session logged in as `user`."""
    client = Client()
    client.force_login(user)
    return client


def api_for(user) -> APIClient:
    """An API client authenticated with a token of `user`."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def verify_post(client, item, decision, criteria=(), comment=""):
    """Submit the verification form for an item at its current version."""
    return client.post(reverse("annotation:verify", args=[item.pk]),
                       {"decision": decision, "criteria": list(criteria), "comment": comment,
                        "item_version": item.version})


def rewrite_post(item, base_version, **over) -> dict:
    """The rewrite form's data for an item unchanged, with `over` applied."""
    data = {"context": item.context, "question": item.question, "answer_index": item.answer_index,
            "base_version": base_version}
    for i, option in enumerate(item.options):
        data[f"option_{i}"] = option
    data.update(over)
    return data


def graph_post(item) -> dict:
    """The clue-graph editor's data (rows and hidden state) for an item's stored graph."""
    from annotation.clue_graph.editing import editable_graph
    from annotation.views.clue_graph import _graph_meta

    graph = editable_graph(item.evidence, item.reasoning)
    data = {"base_version": item.version, "meta": _graph_meta(graph),
            "clue_text": [t for t, _ in graph.clues], "clue_implication": [i for _, i in graph.clues],
            "step_output": [s.output for s in graph.steps], "step_header": [s.header or "" for s in graph.steps]}
    for i, step in enumerate(graph.steps):
        data[f"step_{i}_inputs"] = step.inputs
    return data
