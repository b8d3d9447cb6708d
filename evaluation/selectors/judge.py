"""Reads of the judge: configurations, judge runs, and the accuracy of free-text runs from their labels."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from django.db.models import Count, QuerySet

from annotation.models import BeliefLabel, LabelStatus
from evaluation.judge import specs
from evaluation.models import Result, Run
from evaluation.models.judge import JudgeConfig, JudgeRun


def judge_config_list() -> QuerySet[JudgeConfig]:
    return JudgeConfig.objects.select_related("endpoint", "queue").annotate(run_count=Count("runs")).order_by("name")


def judge_run_list(*, config: str = "", task: str = "", target_run: int | None = None) -> QuerySet[JudgeRun]:
    runs = JudgeRun.objects.select_related("config").defer("targets")
    if config:
        runs = runs.filter(config__name=config)
    if task:
        runs = runs.filter(task=task)
    if target_run is not None:
        runs = runs.filter(target_run_id=target_run)
    return runs.order_by("-created_at", "-id")


def judge_run_line(*, judge_run: JudgeRun) -> dict:
    """The JSON line `judge` prints for a judge run."""
    return {"judge_run": judge_run.pk, "config": judge_run.config.name, "task": judge_run.task,
            "status": judge_run.status, "n": judge_run.n, "scored": judge_run.scored, "unscored": judge_run.unscored,
            "errors": judge_run.errors, "label_counts": judge_run.label_counts, "mean_belief": judge_run.mean_belief,
            "wall_s": judge_run.wall_s}


@dataclass(frozen=True)
class JudgedAccuracy:
    """A free-text run's accuracy according to one judge configuration (final label when reviewed)."""

    config: str
    n: int  # result rows of the run
    scored: int  # results with a scored label
    correct: int
    reviewed: int  # results whose label has a final (human) label

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None

    @property
    def unscored_share(self) -> float | None:
        return (self.n - self.scored) / self.n if self.n else None

    @property
    def accuracy_pct(self) -> float | None:
        return None if self.accuracy is None else 100.0 * self.accuracy

    @property
    def unscored_pct(self) -> float | None:
        return None if self.unscored_share is None else 100.0 * self.unscored_share

    def as_json(self) -> dict:
        return {**asdict(self), "accuracy": self.accuracy, "unscored_share": self.unscored_share}


def free_text_accuracy(*, run: Run) -> list[JudgedAccuracy]:
    """Per judge configuration that judged this free-text run: the share of results whose final label
    (the reviewed one if any, else the judge's) is correct among the scored ones, and the share unscored
    (not judged yet, or the judge's reply could not be read). Empty for other methods."""
    if run.method != specs.FREE_TEXT:
        return []
    n = Result.objects.filter(run=run).count()
    targets = [f"result:{pk}" for pk in Result.objects.filter(run=run).values_list("pk", flat=True)]
    if not targets:
        return []
    per_queue: dict[int, dict[str, int]] = {}
    latest: dict[tuple[int, str], tuple[int, str, str, str]] = {}
    for queue_id, target, version, status, label, final in BeliefLabel.objects.filter(
            task=specs.FREE_TEXT, aspect="verdict", target__in=targets).values_list(
            "queue_id", "target", "item_version", "status", "label", "final_label"):
        key = (queue_id, target)
        if key not in latest or version > latest[key][0]:
            latest[key] = (version, status, label, final)
    for (queue_id, _), (_, status, label, final) in latest.items():
        counts = per_queue.setdefault(queue_id, {"scored": 0, "correct": 0, "reviewed": 0})
        counts["reviewed"] += bool(final)
        if status == LabelStatus.SCORED or final:
            counts["scored"] += 1
            counts["correct"] += (final or label) == specs.CORRECT
    names = dict(JudgeConfig.objects.filter(queue_id__in=per_queue).values_list("queue_id", "name"))
    return sorted((JudgedAccuracy(config=names.get(q, f"queue {q}"), n=n, **c) for q, c in per_queue.items()),
                  key=lambda a: a.config)
