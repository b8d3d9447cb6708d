"""Helpers of the judge's tests: the `judge` command's JSON lines."""
import io
import json

from django.core.management import call_command


def judge(*args: str) -> list[dict]:
    """Run the `judge` management command; its output, one JSON object a line."""
    out = io.StringIO()
    call_command("judge", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def judged_and_reviewed(run, annotator, reviews: int = 14):
    """The built-in judge grades a free-text run, its queue in audit order (uniform draws), and `annotator` reviews
    `reviews` labels, agreeing with the judge (an unscored label: "incorrect"); returns the judge configuration."""
    from annotation.services.belief import belief_queue_policy_set
    from annotation.services.belief_review import belief_lease_next, belief_review_submit
    from evaluation.services import judge as services

    judge("--config", "builtin", "--run", str(run.pk), "--wait")
    config = services.judge_config_builtin()
    belief_queue_policy_set(queue_id=config.queue_id, order="audit")
    for _ in range(reviews):
        lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=lease.label.label or "incorrect")
    return config


def unreviewed_results(run):
    """The run's results whose judge label has no review yet, in id order."""
    from annotation.models import BeliefLabel
    from evaluation.models import Result

    reviewed = {int(t.split(":")[1]) for t in BeliefLabel.objects.filter(reviews__isnull=False)
                .values_list("target", flat=True)}
    return Result.objects.filter(run=run).exclude(pk__in=reviewed).order_by("pk")


def old_judge_label(original):
    """What the judge wrote before it graded each result at its own version, when it judged a stale result: a label
    at the item's new version, the other verdict, sure of it, first in the uniform order."""
    from annotation.models import BeliefLabel

    flipped = "incorrect" if original.label == "correct" else "correct"
    return BeliefLabel.objects.create(queue=original.queue, item=original.item, item_version=original.item_version + 1,
                                      task=original.task, target=original.target, aspect=original.aspect,
                                      label=flipped, choices=original.choices, belief=0.99,
                                      belief_source=original.belief_source, audit_key=0.001, rationale="why")
