"""Helpers of the belief-review tests: labels are recorded through the real service, as the judge does."""
from __future__ import annotations

from annotation.services.belief import belief_labels_record


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


def screening_rows(item, verdicts: dict[str, tuple[str, float]], *, version: int | None = None) -> list[dict]:
    choices = {"keep": ["keep", "delete"]}
    return [{"item_id": item.pk, "item_version": version or item.version, "task": "screening",
             "target": f"item:{item.pk}", "aspect": aspect, "label": label,
             "choices": choices.get(aspect, ["yes", "no"]), "belief": belief, "belief_source": "builtin",
             "status": "scored", "rationale": f"{aspect}: {label}", "producer": "judge-run:2"}
            for aspect, (label, belief) in verdicts.items()]
