"""Researcher dashboard: endpoints, launching runs, live progress, a run's metrics, rows and one row in full.

The leaderboard, the two-run comparison and the exports are in `evaluation.views.tables`."""
from __future__ import annotations

import functools
import hashlib
import json
from urllib.parse import urlencode

from django.contrib import messages
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from evaluation.figures.drawing import Bar, bar_chart
from evaluation.forms.runs import EndpointForm, ResultFilterForm, RunLaunchForm
from evaluation.models import ModelEndpoint, Run, RunStatus, SupersededResult
from evaluation.selectors import judge as judge_selectors
from evaluation.selectors import runs as selectors
from evaluation.selectors.run_record import run_record_counts
from evaluation.services import runs as services
from evaluation.services.sweeps import launch_check
from evaluation.statistics.metrics import RunMetrics
from foundation.error_mapping import REFUSED, add_form_errors, error_text
from foundation.roles import researcher_required


@researcher_required
def endpoint_list_view(request):
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = services.endpoint_create(**form.settings())
        except REFUSED as exc:
            add_form_errors(form, exc)
        else:
            messages.success(request, _("Endpoint %(name)s created.") % {"name": endpoint.name})
            return redirect("evaluation:endpoint_list")
    return render(request, "evaluation/endpoint_list.html", {"endpoints": selectors.endpoint_list(), "form": form})


@researcher_required
def endpoint_edit_view(request, pk: int):
    """Change an endpoint: validated as on creation; runs already launched keep the parameters they had."""
    endpoint = get_object_or_404(ModelEndpoint, pk=pk)
    form = EndpointForm(request.POST or None, instance=endpoint)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = services.endpoint_update(endpoint=endpoint, expected_version=form.cleaned_data.get("version"),
                                                **form.settings())
        except REFUSED as exc:
            add_form_errors(form, exc)
        else:
            messages.success(request, _("Endpoint %(name)s saved.") % {"name": endpoint.name})
            return redirect("evaluation:endpoint_list")
    return render(request, "evaluation/endpoint_edit.html", {"endpoint": ModelEndpoint.objects.get(pk=pk),
                                                             "form": form})


@researcher_required
def run_list_view(request):
    runs = selectors.run_list()
    context = {"runs": runs, "polling": any(r.is_active for r in runs)}
    data = [context["polling"], [(r.pk, r.method, r.endpoint.name, r.split, r.option_order, r.seed, r.status,
                                  r.created_at, r.progress.as_json(), r.summary.as_json(), r.summary.why)
                                 for r in runs]]
    runs_html = cached_render("evaluation/run_list.html#runs", request, data=data, context=context)
    if request.htmx:
        return HttpResponse(runs_html)
    return render(request, "evaluation/run_list.html", {"runs_html": runs_html})


def cached_render(template: str, request, *, data, context: dict) -> str:
    """A table partial rendered once per distinct content: the key is a digest of every number and name it
    shows (``data``), of the request's query (its links) and of the page's language, so a cached copy is never out
    of date; a large table then costs its data, not its ~1,000 template nodes, on each request."""
    shown = [template, request.GET.urlencode(), translation.get_language(), data]
    digest = hashlib.sha1(json.dumps(shown, sort_keys=True, default=str)
                          .encode()).hexdigest()
    key = f"evaluation:partial:{digest}"
    html = cache.get(key)
    if html is None:
        html = render_to_string(template, context, request)
        cache.set(key, html, 3600)
    return mark_safe(html)  # rendered by the template engine, which escaped it


@researcher_required
def run_launch_view(request):
    """A sweep: every ticked endpoint x every ticked method over one selection (the estimate is shown first)."""
    form = RunLaunchForm(request.POST or None, initial={"endpoints": request.GET.getlist("endpoint")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            _, warnings = launch_check(endpoints=list(data["endpoints"]), methods=data["methods"],
                                       check=not data.get("no_preflight"), **form.selection())
            launched = services.sweep_launch(endpoints=list(data["endpoints"]), methods=data["methods"],
                                             user=request.user, **form.selection())
        except REFUSED as exc:
            add_form_errors(form, exc)
        else:
            for warning in warnings:
                messages.warning(request, warning)
            messages.success(request, ngettext("Launched %(n)d run.", "Launched %(n)d runs.", len(launched))
                             % {"n": len(launched)})
            if len(launched) == 1:
                return redirect("evaluation:run_detail", pk=launched[0].pk)
            return redirect("evaluation:run_list")
    return render(request, "evaluation/run_launch.html", {"form": form})


def accuracy_figure(title: str, rows: list[tuple[str, RunMetrics]]) -> str:
    """Accuracy bars with 95% CI and, on each bar, the always-first-option baseline of the same rows."""
    bars = [Bar(label, m.accuracy, m.ci_low, m.ci_high, f"n={m.n}", m.first_option_baseline) for label, m in rows]
    return mark_safe(bar_chart(bars, title=title))  # bar_chart escapes every text it writes


def not_found(request, message: str) -> HttpResponse:
    """The site's 404 page with its layout, saying what is missing, also with DEBUG on (where a raised Http404
    shows Django's technical page instead)."""
    return render(request, "404.html", {"request_path": request.path, "reason": message}, status=404)


def with_run(view):
    """Load the run named by the URL's `pk` (with its endpoint) and call `view(request, run, ...)`; a run that
    does not exist is the site's 404 page naming it, in one place for every run page."""

    @functools.wraps(view)
    def wrapper(request, pk: int, *args, **kwargs):
        superseded = SupersededResult.objects.filter(run=OuterRef("pk")).order_by().values("run").annotate(
            n=Count("pk")).values("n")  # in the run's own query: a run page costs no query more
        run = (Run.objects.select_related("endpoint").annotate(superseded=Coalesce(Subquery(superseded), 0))
               .filter(pk=pk).first())
        if run is None:
            return not_found(request, _("There is no run %(n)s.") % {"n": pk})
        return view(request, run, *args, **kwargs)

    return wrapper


@researcher_required
@with_run
def run_detail_view(request, run: Run):
    progress = selectors.run_progress(run=run)
    if request.htmx and request.GET.get("part") == "progress":
        return render(request, "evaluation/run_detail.html#progress", {"run": run, "progress": progress})
    filters = ResultFilterForm(request.GET or None)
    chosen = filters.cleaned_data if filters.is_valid() else {}
    status, question_type = chosen.get("status", ""), chosen.get("question_type", "")
    rows = selectors.run_results(run=run, status=status, question_type=question_type)
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    page.object_list = selectors.with_gold_as_asked(list(page.object_list))  # a stale row's gold as it was asked
    query = urlencode({k: v for k, v in (("status", status), ("question_type", question_type)) if v})
    context = {"run": run, "progress": progress, "page": page, "status": status, "question_type": question_type,
               "filters": filters, "query": query, "types_present": selectors.run_question_types(run=run)}
    if request.htmx and request.GET.get("part") == "results":
        return render(request, "evaluation/run_detail.html#results", context)
    summary, types = selectors.run_summary_and_question_types(run=run)
    judged = judge_selectors.free_text_accuracy(run=run)
    free_text = run.method in selectors.FREE_TEXT_METHODS
    context.update({
        "summary": summary, "m": summary.metrics, "types": types,
        "figure": accuracy_figure(_("Accuracy by question type (95% CI)"), list(types.items())),
        "judged": judged if not run.is_active and run.status != RunStatus.FAILED else [],
        "accuracy_gap": selectors.accuracy_gap(run, summary.metrics, resolved=progress.resolved, total=progress.total,
                                               judged=bool(judged)),
        "judge_link": free_text and run.status == RunStatus.FINISHED,
        "record": run_record_counts(run=run), "superseded": run.superseded,
    })
    return render(request, "evaluation/run_detail.html", context)


@researcher_required
@with_run
def result_detail_view(request, run: Run, result_pk: int):
    """One row in full: the messages sent, the raw output, the parsed answer, key information beside the clues."""
    try:
        detail = selectors.result_detail(run=run, pk=result_pk)
    except Http404:
        return not_found(request, _("Run %(run)s has no result %(n)s.") % {"run": run.pk, "n": result_pk})
    return render(request, "evaluation/result_detail.html", {"run": run, **detail})


@researcher_required
@require_POST
@with_run
def run_cancel_view(request, run: Run):
    run = services.run_cancel(run=run)
    messages.info(request, _("Run %(n)s cancelled.") % {"n": run.pk})
    return redirect("evaluation:run_detail", pk=run.pk)


@researcher_required
@require_POST
@with_run
def run_resume_view(request, run: Run):
    run = services.run_resume(run=run)
    messages.info(request, _("Run %(n)s re-launched: only missing or failed rows are computed.") % {"n": run.pk})
    return redirect("evaluation:run_detail", pk=run.pk)


@researcher_required
@require_POST
@with_run
def run_refresh_view(request, run: Run):
    """Ask the run's stale rows again (their old answers are kept as superseded rows); a refusal is a message."""
    try:
        run, superseded = services.run_refresh(run=run, user=request.user)
    except REFUSED as exc:
        messages.error(request, error_text(exc))
    else:
        messages.info(request, ngettext(
            "Run %(n)s refreshed: %(rows)s stale row kept as superseded and its item asked again.",
            "Run %(n)s refreshed: %(rows)s stale rows kept as superseded and their items asked again.",
            superseded) % {"n": run.pk, "rows": superseded})
    return redirect("evaluation:run_detail", pk=run.pk)
