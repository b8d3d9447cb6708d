"""Researchers' pages: curation progress (and queueing imported items), verification agreement and its export."""
from __future__ import annotations

import io

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from annotation import selectors, services
from annotation.forms import EnterWorkflowForm
from annotation.models import ItemStatus, Stage
from foundation import csv_safety
from foundation.downloads import attach
from foundation.roles import researcher_required


@researcher_required
def progress_view(request):
    """The curation board; a POST queues imported items: a chosen split/source, counted, then confirmed."""
    form, confirm, status = EnterWorkflowForm(), None, 200
    if request.method == "POST":
        form = EnterWorkflowForm(request.POST)
        if not form.is_valid():
            status = 400
        elif form.cleaned_data["confirm"]:
            moved = services.items_enter_workflow(user=request.user, **form.scope())
            messages.success(request, _("%(n)s imported item(s) queued for verification.") % {"n": moved})
            return redirect("annotation:progress")
        else:
            confirm = {**form.cleaned_data, "n": services.items_enter_workflow(user=request.user, **form.scope(),
                                                                               dry_run=True)}
    board = selectors.progress_board()
    return render(request, "annotation/progress.html", {
        "board": board, "form": form, "confirm": confirm, "stages": Stage.choices,
        "every_split": EnterWorkflowForm.EVERY_SPLIT,
        "imported_splits": [row for row in board["by_split"] if row["status"] == ItemStatus.IMPORTED]}, status=status)


@researcher_required
def agreement_view(request):
    return render(request, "annotation/agreement.html", {"report": selectors.verification_agreement()})


@researcher_required
def agreement_export_view(request, fmt: str):
    report = selectors.verification_agreement()
    if fmt == "json":
        response = JsonResponse(report, json_dumps_params={"indent": 2})
    elif fmt == "csv":
        out = io.StringIO()
        writer = csv_safety.DictWriter(out, fieldnames=["question", "pair", "items", "percent_agreement", "cohen_kappa",
                                                 "fleiss_kappa"])
        writer.writeheader()
        writer.writerows(selectors.agreement_rows(report))
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    else:
        raise Http404("csv or json")
    return attach(response, "verification-agreement", fmt)
