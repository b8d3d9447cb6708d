"""The judge on the researcher dashboard: configurations, judge runs with live counts, launching one."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from evaluation.forms.judge import JudgeRunLaunchForm, judge_run_name
from evaluation.selectors import judge as selectors
from evaluation.services import judge as services
from foundation.error_mapping import REFUSED, add_form_errors
from foundation.roles import researcher_required


@researcher_required
def judge_run_list_view(request):
    """GET: configurations and judge runs (the list polls while a run is active); POST: launch a judge run."""
    configs = list(selectors.judge_config_list())
    form = JudgeRunLaunchForm(request.POST or None, initial={"run": request.GET.get("run")}, configs=configs,
                              splits=selectors.item_splits())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            config = services.judge_config_get(name=data["config"])
            judge_run = services.judge_run_launch(config=config, task=data["task"], run=data["run"],
                                                  split=data["split"], limit=data["limit"], user=request.user)
        except REFUSED as exc:
            add_form_errors(form, exc)
        else:
            messages.success(request, _("Judge run launched: %(name)s (%(n)s targets).")
                             % {"name": judge_run_name(judge_run), "n": judge_run.n})
            return redirect("evaluation:judge_run_list")
    runs = list(selectors.judge_run_list()[:100])
    for judge_run in runs:
        judge_run.name = judge_run_name(judge_run)
    context = {"form": form, "configs": configs, "judge_runs": runs,
               "polling": any(r.is_active for r in runs)}
    template = "evaluation/judge_runs.html#judge_runs" if request.htmx else "evaluation/judge_runs.html"
    return render(request, template, context)
