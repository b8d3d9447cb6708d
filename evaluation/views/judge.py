"""The judge on the researcher dashboard: configurations, judge runs with live counts, launching one; each
configuration's quality card (and its CSV), from which a position probe is launched."""
from __future__ import annotations

import io

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from evaluation.forms.judge import JudgeRunLaunchForm, judge_run_name
from evaluation.forms.judge_probe import JudgeProbeLaunchForm
from evaluation.selectors import judge as selectors
from evaluation.selectors import judge_quality as quality_selectors
from evaluation.services import judge as services
from foundation import csv_safety
from foundation.downloads import attach
from foundation.error_mapping import REFUSED, add_form_errors
from foundation.errors import NotFound
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


def _config_or_404(name: str):
    try:
        return services.judge_config_get(name=name)
    except NotFound:
        raise Http404(_("No judge configuration %(name)s.") % {"name": name}) from None


@researcher_required
def judge_quality_view(request, name: str):
    """GET: the judge configuration's quality card; POST: launch a position probe of one of its judge runs."""
    config = _config_or_404(name)
    runs = quality_selectors.probe_choices(config=config)
    form = JudgeProbeLaunchForm(request.POST or None, judge_runs=runs)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                judge_run = next(r for r in runs if r.pk == data["judge_run"])
                probed = services.judge_probe_launch(judge_run=judge_run, kind=data["kind"], sample=data["sample"],
                                                     seed=data["seed"], user=request.user)
            except REFUSED as exc:
                add_form_errors(form, exc)
            else:
                messages.success(request, _("Position probe launched: %(n)s targets judged again with the options "
                                            "permuted.") % {"n": probed.n})
                return redirect("evaluation:judge_quality", name=config.name)
        status = 400
    card = quality_selectors.judge_quality_card(config=config)
    polling = any(r["status"] in ("queued", "running") for p in card["position"] for r in p["runs"])
    context = {"config": config, "card": card, "form": form, "polling": polling}
    template = "evaluation/judge_quality.html#card" if request.htmx else "evaluation/judge_quality.html"
    return render(request, template, context, status=status)


@researcher_required
def judge_quality_csv_view(request, name: str):
    """The quality card as CSV: one row per figure with its interval and n."""
    config = _config_or_404(name)
    rows = quality_selectors.card_rows(quality_selectors.judge_quality_card(config=config))
    out = io.StringIO()
    writer = csv_safety.DictWriter(out, fieldnames=quality_selectors.CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    return attach(response, f"judge-quality-{config.name}", "csv")
