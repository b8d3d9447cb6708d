"""The judge's dashboard form: launch a judge run (validation only; the service decides).

Everything is chosen from a list that names it: the judge configuration with its endpoint, the free-text run by
method, model, option order and date, the split among those the items have."""
from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from evaluation.judge.specs import JUDGE_TASKS
from evaluation.models import Run

#: The judge's tasks as the form names them.
TASK_WORDS = {"free-text": pgettext_lazy("judge task", "free-text"),
              "screening": pgettext_lazy("judge task", "screening"),
              "clue-graph": pgettext_lazy("judge task", "clue-graph")}
MAX_INT = 2**31 - 1
BUILTIN_CONFIG = "builtin"  # evaluation.services.judge.BUILTIN_CONFIG: created on its first run
OFFLINE = _("offline, built in")
ANY_SPLIT = _("any split")


def config_label(config) -> str:
    """A judge configuration as a person picks it: its name and what answers (its endpoint, or offline)."""
    if config.endpoint_id:
        return f"{config.name} · {config.endpoint.name} ({config.endpoint.model})"
    return f"{config.name} · {OFFLINE}"


def run_label(run) -> str:
    """A free-text run as a person picks it (evaluation.forms.analysis.run_choice_label, and its split)."""
    from evaluation.forms.analysis import run_choice_label

    return f"{run_choice_label(run)} · {run.split or ANY_SPLIT}"


def judge_run_name(judge_run) -> str:
    """A judge run as a person names it: the judge (and the endpoint answering for it) on what it judged (the
    free-text run by method, model, option order and date, or the split), not by their ids."""
    from evaluation.forms.analysis import run_choice_label

    config = judge_run.config
    judge = f"{config.name} ({config.endpoint.name})" if config.endpoint_id else config.name
    if judge_run.target_run_id:
        return _("%(judge)s on %(run)s") % {"judge": judge, "run": run_choice_label(judge_run.target_run)}
    return _("%(judge)s on split %(split)s") % {"judge": judge, "split": judge_run.split}


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        return run_label(obj)


class JudgeRunLaunchForm(forms.Form):
    config = forms.ChoiceField(label=_("Judge"), initial=BUILTIN_CONFIG,
                               error_messages={"invalid_choice": _("no judge configuration %(value)s: choose one of "
                                                                   "the list")},
                               help_text=_("A judge configuration and the endpoint that answers for it; "
                                           "“builtin” is the offline judge."))
    task = forms.ChoiceField(label=_("Task"),
                             choices=[("", _("the configuration's (free-text with a run)"))]
                             + [(t, TASK_WORDS.get(t, t)) for t in JUDGE_TASKS],
                             required=False)
    run = RunChoiceField(queryset=Run.objects.filter(method="free-text").select_related("endpoint")
                         .defer("item_ids", "requested_ids").order_by("-pk"),
                         required=False, label=_("Run"), empty_label="—",
                         help_text=_("A free-text run whose answers are judged."))
    split = forms.ChoiceField(label=_("Split"), required=False,
                              help_text=_("Screening / clue-graph: the items of a split."))
    limit = forms.IntegerField(label=_("Limit"), min_value=1, max_value=MAX_INT, required=False)

    def __init__(self, *args, configs=(), splits=(), **kwargs):
        super().__init__(*args, **kwargs)
        named = [(c.name, config_label(c)) for c in configs]
        if BUILTIN_CONFIG not in {name for name, _label in named}:
            named.insert(0, (BUILTIN_CONFIG, f"{BUILTIN_CONFIG} · {OFFLINE}"))
        self.fields["config"].choices = named
        self.fields["split"].choices = [("", "—")] + [(s, s) for s in splits]
