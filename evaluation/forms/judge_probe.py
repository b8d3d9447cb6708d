"""The quality card's form: launch a position probe of one of the configuration's judge runs (validation only;
the service decides)."""
from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from evaluation.forms.judge import judge_run_name
from evaluation.models.judge import ProbeKind

PROBE_WORDS = {ProbeKind.REVERSED: _("options reversed"), ProbeKind.ROTATED: _("options rotated one place")}


class JudgeProbeLaunchForm(forms.Form):
    judge_run = forms.TypedChoiceField(label=_("Judge run"), coerce=int,
                                       help_text=_("Its targets are sampled and judged again with the options "
                                                   "permuted."))
    kind = forms.ChoiceField(label=_("Permutation"), choices=list(PROBE_WORDS.items()), initial=ProbeKind.REVERSED)
    sample = forms.IntegerField(label=_("Sample"), min_value=1, max_value=10_000, initial=50,
                                help_text=_("How many of its targets (drawn uniformly at random, seeded)."))
    seed = forms.IntegerField(label=_("Seed"), min_value=0, max_value=2**31 - 1, initial=0)

    def __init__(self, *args, judge_runs=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["judge_run"].choices = [(r.pk, f"#{r.pk} {judge_run_name(r)} · {r.task} · n = {r.n}")
                                            for r in judge_runs]
