"""Reads of the judge: configurations, judge runs, and the accuracy of free-text runs from their labels."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from django.db.models import Count, F, QuerySet
from django.utils.translation import gettext

from annotation.models import BeliefLabel, BeliefQueue, Item, LabelStatus
from annotation.selectors.belief_trust import powered_share
from evaluation.judge import specs
from evaluation.models import Result, Run
from evaluation.models.judge import JudgeConfig, JudgeRun


def judge_config_list() -> QuerySet[JudgeConfig]:
    return JudgeConfig.objects.select_related("endpoint", "queue").annotate(run_count=Count("runs")).order_by("name")


def item_splits() -> list[str]:
    """The splits the items have (what a screening or clue-graph judge run may judge)."""
    return list(Item.objects.order_by("split").values_list("split", flat=True).distinct())


def judge_run_list(*, config: str = "", task: str = "", target_run: int | None = None) -> QuerySet[JudgeRun]:
    runs = (JudgeRun.objects.select_related("config__endpoint", "target_run__endpoint")
            .defer("targets", "target_run__item_ids", "target_run__requested_ids"))
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
    """A free-text run's accuracy according to one judge configuration (final label when reviewed).

    Every result the model gave (rows without an infrastructure error, as for multiple choice) is in one of four
    kinds: graded (a verdict, the reviewer's final label else the judge's), unanswered (the model gave no answer:
    wrong, as a missing answer is in multiple choice), unreadable (the judge's reply could not be read) and
    pending (not judged yet). Accuracy is correct / (graded + unanswered); the unscored share is what nobody
    knows (unreadable + pending) of n.
    """

    config: str
    n: int  # result rows of the run without an infrastructure error
    scored: int  # graded: results with a verdict (the judge's, or a final human label)
    correct: int
    reviewed: int  # results whose label has a final (human) label
    unanswered: int = 0  # the model gave no answer (counted wrong)
    unreadable: int = 0  # the judge's reply could not be read (no verdict)
    pending: int = 0  # no label from this judge yet
    powered: dict | None = None  # the judge-powered (PPI++) accuracy under the queue's review design
    people: dict | None = None  # the accuracy from the queue's reviews alone (weighted), for comparison

    @property
    def counted(self) -> int:
        """The denominator: graded results and the model's non-answers."""
        return self.scored + self.unanswered

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.counted if self.counted else None

    def _share(self, count: int) -> float | None:
        return count / self.n if self.n else None

    @property
    def unscored_share(self) -> float | None:
        """Of n, the results whose correctness nobody knows: the judge's unreadable replies and those not judged."""
        return self._share(self.unreadable + self.pending)

    @property
    def unanswered_share(self) -> float | None:
        return self._share(self.unanswered)

    @property
    def unreadable_share(self) -> float | None:
        return self._share(self.unreadable)

    @property
    def accuracy_pct(self) -> float | None:
        return None if self.accuracy is None else 100.0 * self.accuracy

    @property
    def unscored_pct(self) -> float | None:
        return None if self.unscored_share is None else 100.0 * self.unscored_share

    def as_json(self) -> dict:
        return {**asdict(self), "accuracy": self.accuracy, "counted": self.counted,
                "unscored_share": self.unscored_share, "unanswered_share": self.unanswered_share,
                "unreadable_share": self.unreadable_share}


def free_text_accuracy(*, run: Run, item_ids: Sequence[int] | None = None,
                       fresh_only: bool = False) -> list[JudgedAccuracy]:
    """Per judge configuration that judged this free-text run: the share of results whose final label (the
    reviewed one if any, else the judge's) is correct, a result without an answer counting as wrong, with the
    unscored results told apart (the judge's unreadable replies, those not judged yet). Empty for other
    methods. ``item_ids``: only the results of these items; ``fresh_only``: only results whose item has not
    changed since (the leaderboard's like for like)."""
    if run.method != specs.FREE_TEXT:
        return []
    results = Result.objects.filter(run=run, error="")
    if item_ids is not None:
        results = results.filter(item_id__in=list(item_ids))
    if fresh_only:
        results = results.filter(item_version=F("item__content_version"))
    answered = {pk: (answer, version) for pk, answer, version in results.values_list("pk", "free_answer",
                                                                                        "item_version")}
    n = len(answered)
    targets = {f"result:{pk}": bool((answer or "").strip()) for pk, (answer, _) in answered.items()}
    if not targets:
        return []
    # A result's verdict is a label at the version it was asked (the content its answer answered): a label at any
    # other version graded it against content the model never saw.
    asked = {f"result:{pk}": version for pk, (_, version) in answered.items()}
    latest: dict[tuple[int, str], tuple[int, str, str, str]] = {}
    judged_by: set[int] = set()
    for queue_id, target, version, status, label, final in BeliefLabel.objects.filter(
            task=specs.FREE_TEXT, aspect="verdict", target__in=list(targets)).values_list(
            "queue_id", "target", "item_version", "status", "label", "final_label"):
        judged_by.add(queue_id)
        if version == asked[target]:
            latest[(queue_id, target)] = (version, status, label, final)
    queues = sorted(judged_by)
    names = dict(JudgeConfig.objects.filter(queue_id__in=queues).values_list("queue_id", "name"))
    accuracies = []
    for queue_id in queues:
        c = {"scored": 0, "correct": 0, "reviewed": 0, "unanswered": 0, "unreadable": 0, "pending": 0}
        for target, has_answer in targets.items():
            found = latest.get((queue_id, target))
            status, label, final = found[1:] if found is not None else ("", "", "")
            c["reviewed"] += bool(final)
            if final or (has_answer and status == LabelStatus.SCORED):
                c["scored"] += 1
                c["correct"] += (final or label) == specs.CORRECT
            elif not has_answer:
                c["unanswered"] += 1  # whatever the judge said or did not say: no answer is wrong
            elif found is not None and status == LabelStatus.UNSCORED:
                c["unreadable"] += 1
            else:
                c["pending"] += 1
        powered = _powered(queue_id, {t: asked[t] for t, has_answer in targets.items() if has_answer},
                           n - sum(targets.values()), c["pending"])
        accuracies.append(JudgedAccuracy(config=names.get(queue_id, f"queue {queue_id}"), n=n, **c, **powered))
    return sorted(accuracies, key=lambda a: a.config)


def _powered(queue_id: int, answered: dict[str, int], unanswered: int, pending: int) -> dict:
    """The run's accuracy from the judge and the queue's reviews (annotation.ppi under the queue's design), and
    from the reviews alone; results without an answer are known to be wrong. Refused while results are not
    judged yet (they had no chance of review). ``answered``: target -> the version it was asked at (only the label
    at that version counts, as for the judge's accuracy above)."""
    if pending:
        reason = gettext("%(n)s result(s) not judged yet: they had no chance of review") % {"n": pending}
        refused = {"value": None, "low": None, "high": None, "n": len(answered) + unanswered, "n_reviewed": 0,
                   "n_uniform": 0, "lam": None, "reason": reason}
        return {"powered": refused, "people": refused}
    share = powered_share(queue=BeliefQueue.objects.get(pk=queue_id), task=specs.FREE_TEXT, targets=list(answered),
                          known_zeros=unanswered, asked=answered)
    return {"powered": share["powered"], "people": share["people"]} if share else {}
