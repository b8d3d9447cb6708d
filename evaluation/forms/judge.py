"""The judge's dashboard form: launch a judge run (validation only; the service decides)."""
from __future__ import annotations

from django import forms

from evaluation.judge.specs import JUDGE_TASKS
from evaluation.models import Run

MAX_INT = 2**31 - 1


class JudgeRunLaunchForm(forms.Form):
    config = forms.SlugField(max_length=64, initial="builtin",
                             help_text='A judge configuration; "builtin" is the offline judge.')
    task = forms.ChoiceField(choices=[("", "the configuration's (free-text with a run)")] + [(t, t) for t in JUDGE_TASKS],
                             required=False)
    run = forms.ModelChoiceField(queryset=Run.objects.filter(method="free-text").order_by("-pk"), required=False,
                                 help_text="A free-text run whose answers are judged.")
    split = forms.CharField(max_length=40, required=False, help_text="Screening / clue-graph: the items of a split.")
    limit = forms.IntegerField(min_value=1, max_value=MAX_INT, required=False)
