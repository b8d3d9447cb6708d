"""Judge configurations and judge runs (evaluation.models imports them, where Django finds them).

A judge configuration is a model endpoint (or the built-in offline judge), a task, a
prompt template and a belief source; its labels go to its own annotation BeliefQueue
(the review policy). A judge run applies a configuration to a fixed list of targets:
the results of a free-text run, or the items of a split.
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from annotation.models import LabelStatus, LabelTask
from evaluation.judge import beliefs, probe, specs, templates
from evaluation.models.runs import RunStatus


def run_status_choices() -> list[tuple[str, str]]:
    """A judge run has the states of a model run (a callable, as the migrations name it)."""
    return RunStatus.choices


class BeliefSource(models.TextChoices):
    LOGPROB = beliefs.LOGPROB, "Token log-probabilities"
    SAMPLED = beliefs.SAMPLED, "Majority share of k samples"
    VERBAL = beliefs.VERBAL, "Stated confidence"
    BUILTIN = beliefs.BUILTIN, "Built-in offline judge"


class ProbeKind(models.TextChoices):
    REVERSED = probe.REVERSED, "Options reversed"
    ROTATED = probe.ROTATED, "Options rotated one place"


class JudgeConfig(models.Model):
    """How labels are proposed: endpoint (none for the built-in judge), task, template, belief source."""

    name = models.SlugField(max_length=64, unique=True, help_text="Also the name of its review queue.")
    description = models.TextField(blank=True)
    endpoint = models.ForeignKey("evaluation.ModelEndpoint", null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="judge_configs", help_text="Empty for the built-in judge.")
    task = models.CharField(max_length=20, choices=LabelTask.choices, blank=True,
                            help_text="The task judged; empty: any (the built-in judge).")
    belief_source = models.CharField(max_length=10, choices=BeliefSource.choices)
    template = models.CharField(max_length=64, blank=True,
                                help_text="A file of evaluation/judge_templates/ (empty: the task's own).")
    samples = models.PositiveSmallIntegerField(default=1, help_text="k replies per target (sampled belief).")
    temperature = models.FloatField(null=True, blank=True, help_text="Overrides the endpoint's temperature.")
    queue = models.OneToOneField("annotation.BeliefQueue", on_delete=models.PROTECT, related_name="judge_config")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(belief_source=beliefs.BUILTIN, endpoint__isnull=True)
                           | (~Q(belief_source=beliefs.BUILTIN) & Q(endpoint__isnull=False))),
                name="judge_config_builtin_iff_no_endpoint"),
            models.CheckConstraint(
                condition=(Q(belief_source=beliefs.SAMPLED, samples__gte=2)
                           | (~Q(belief_source=beliefs.SAMPLED) & Q(samples=1))),
                name="judge_config_samples_only_when_sampled"),
            models.CheckConstraint(condition=~Q(task="") | Q(belief_source=beliefs.BUILTIN),
                                   name="judge_config_model_judges_one_task"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_builtin(self) -> bool:
        return self.belief_source == beliefs.BUILTIN

    def tasks(self) -> tuple[str, ...]:
        return (self.task,) if self.task else specs.JUDGE_TASKS

    def template_for(self, task: str) -> str:
        return self.template or specs.get_task(task).template

    def clean(self) -> None:
        errors = {}
        if self.is_builtin and self.endpoint_id:
            errors["endpoint"] = "The built-in judge uses no endpoint."
        if not self.is_builtin and not self.endpoint_id:
            errors["endpoint"] = "A model judge needs an endpoint."
        if not self.is_builtin and not self.task:
            errors["task"] = "A model judge judges one task (its prompt is that task's)."
        if self.belief_source == beliefs.SAMPLED and (self.samples or 0) < 2:
            errors["samples"] = "A sampled belief needs at least 2 samples."
        if self.belief_source != beliefs.SAMPLED and self.samples != 1:
            errors["samples"] = "Only a sampled belief takes several samples."
        if self.belief_source == beliefs.SAMPLED and self.task == specs.CLUE_GRAPH:
            errors["belief_source"] = "A clue-graph draft has no majority: use logprob, verbal or builtin."
        if self.template:
            if self.is_builtin:
                errors["template"] = "The built-in judge has no prompt."
            else:
                try:
                    templates.template_text(self.template)
                except ValueError as exc:
                    errors["template"] = str(exc)
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            errors["temperature"] = "Temperature must be between 0 and 2."
        if errors:
            raise ValidationError(errors)


class JudgeRun(models.Model):
    """One judge configuration over a fixed list of targets; re-running computes only targets without a label."""

    config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="runs")
    task = models.CharField(max_length=20, choices=LabelTask.choices)
    target_run = models.ForeignKey("evaluation.Run", null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="judge_runs", help_text="The free-text run whose results are judged.")
    split = models.CharField(max_length=40, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True)
    targets = models.JSONField(default=list, blank=True, help_text='Resolved at launch: "result:<id>" / "item:<id>".')
    status = models.CharField(max_length=10, choices=run_status_choices, default="queued", db_index=True)
    n = models.PositiveIntegerField(default=0, help_text="Targets.")
    scored = models.PositiveIntegerField(default=0, help_text="Targets whose every label is scored.")
    unscored = models.PositiveIntegerField(default=0, help_text="Targets with an unscored label (raw text kept).")
    errors = models.PositiveIntegerField(default=0, help_text="Targets left without a label (request failed).")
    label_counts = models.JSONField(default=dict, blank=True)
    mean_belief = models.FloatField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True,
                               help_text="Seconds of all its executions (a resumed run adds each one).")
    last_error = models.TextField(blank=True)
    note = models.CharField(max_length=200, blank=True)
    probe = models.CharField(max_length=10, choices=ProbeKind.choices, blank=True, default="",
                             help_text="A position probe: its targets judged again with the options permuted; its "
                                       "labels go to JudgeProbeLabel, not to the review queue.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(task=specs.FREE_TEXT) | Q(target_run__isnull=False),
                                   name="judge_run_free_text_has_run"),
            models.CheckConstraint(condition=Q(mean_belief__isnull=True) | Q(mean_belief__gte=0, mean_belief__lte=1),
                                   name="judge_run_mean_belief_in_unit"),
            models.CheckConstraint(condition=Q(probe="") | Q(task__in=probe.PROBED_TASKS),
                                   name="judge_run_probe_sees_options"),
        ]

    def __str__(self) -> str:
        return f"judge run {self.pk}: {self.config_id} {self.task}"

    @property
    def producer(self) -> str:
        return f"judge-run:{self.pk}"

    @property
    def is_active(self) -> bool:
        return self.status in ("queued", "running")


class JudgeProbeLabel(models.Model):
    """A label of a position probe: one target and aspect judged with the options in ``option_order`` (position
    i showed the original option option_order[i]); compared with the configuration's label of the same target,
    aspect and item version in its review queue. Never reviewed, never in a queue."""

    judge_run = models.ForeignKey(JudgeRun, on_delete=models.PROTECT, related_name="probe_labels")
    target = models.CharField(max_length=64)
    aspect = models.CharField(max_length=32)
    task = models.CharField(max_length=20, choices=LabelTask.choices)
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="+")
    item_version = models.PositiveIntegerField()
    option_order = models.JSONField(default=list)
    label = models.CharField(max_length=40, blank=True)
    belief = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=LabelStatus.choices)
    payload = models.JSONField(default=dict, blank=True)
    rationale = models.TextField(blank=True)
    raw_output = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["judge_run_id", "target", "aspect"]
        constraints = [
            models.UniqueConstraint(fields=["judge_run", "target", "aspect", "item_version"],
                                    name="judge_probe_label_once"),
            models.CheckConstraint(condition=Q(belief__isnull=True) | Q(belief__gte=0, belief__lte=1),
                                   name="judge_probe_label_belief_in_unit"),
        ]

    def __str__(self) -> str:
        return f"probe label {self.pk}: {self.target} {self.aspect} {self.label}"
