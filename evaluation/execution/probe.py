"""The position probe's side of a judge run's execution: which targets it still lacks (shown with the options
permuted), and where its labels go (JudgeProbeLabel, not the review queue).

A probe is a JudgeRun with ``probe`` set (the permutation) and is executed by `evaluation.execution.judge`
like any judge run — the same engine, client, limiter, circuit breaker, response cache, heartbeats and
resume; the three functions here are what that execution asks of a probe instead of the review queue.
"""
from __future__ import annotations

from evaluation.judge import probe, specs
from evaluation.judge.specs import JudgeInput
from evaluation.models.item_versions import items_at_versions
from evaluation.models.judge import JudgeProbeLabel, JudgeRun

PROBE_FIELDS = ("label", "belief", "status", "payload", "rationale", "raw_output", "tokens")


def probe_missing_inputs(judge_run: JudgeRun, inputs: list[JudgeInput]) -> list[JudgeInput]:
    """The probe's targets still without a probe label for every aspect at the version they are judged at, each
    with its options permuted (targets whose options the permutation leaves in place are not asked)."""
    aspects = set(specs.get_task(judge_run.task).aspect_names)
    have: dict[tuple[str, int], set[str]] = {}
    for target, aspect, version in JudgeProbeLabel.objects.filter(judge_run=judge_run).values_list(
            "target", "aspect", "item_version"):
        have.setdefault((target, version), set()).add(aspect)
    return [probe.permuted(data, judge_run.probe) for data in inputs
            if probe.moves(judge_run.probe, len(data.options))
            and not aspects <= have.get((data.target, data.item_version), set())]


def probe_labels_record(*, judge_run: JudgeRun, rows: list[dict]) -> int:
    """Store a probe's label rows (the rows a judge run writes to its queue); a row already stored is kept
    (one label per target, aspect and item version), so a resumed probe writes each once."""
    # The options as the target was judged: its item at the label's version (a result's, not the item's current one).
    asked = items_at_versions((row["item_id"], row["item_version"]) for row in rows)
    sizes = {key: item.options for key, item in asked.items()}
    created = JudgeProbeLabel.objects.bulk_create([JudgeProbeLabel(
        judge_run=judge_run, target=row["target"], aspect=row["aspect"], task=row["task"], item_id=row["item_id"],
        item_version=row["item_version"], option_order=list(probe.option_order(judge_run.probe,
                                                                               len(sizes.get((row["item_id"], row["item_version"]), [])))),
        **{name: row.get(name) for name in PROBE_FIELDS if row.get(name) is not None})
        for row in rows], ignore_conflicts=True)
    return len(created)


def probe_labels(judge_run: JudgeRun):
    """The probe's labels, with the fields a judge run's counts read (as the queue's labels have them)."""
    return JudgeProbeLabel.objects.filter(judge_run=judge_run, task=judge_run.task)
