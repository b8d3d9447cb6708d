"""Question verification (keep/delete with the Table-7 criteria) and adjudication of disagreements."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render

from detectbench_web.roles import annotator_required

from .. import selectors, services
from ..forms import CRITERIA_KEYS, AdjudicationForm, VerificationForm
from ..models import Criterion, Item, Stage
from ..selectors.belief import screening_view
from .common import attempt, item_options, stage_context


@annotator_required
def verify_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    status = 200
    if request.method == "POST":
        form = VerificationForm(request.POST)
        if form.is_valid():
            _, refusal = attempt(lambda: services.verification_submit(
                item_id=item.pk, user=request.user, decision=form.cleaned_data["decision"],
                criteria=form.cleaned_data["criteria"], comment=form.cleaned_data["comment"],
                item_version=form.cleaned_data["item_version"]), form=form)
            if refusal is None:
                messages.success(request, f"Saved: {form.cleaned_data['decision']} for {item}. Press n for the next item.")
                return redirect("annotation:verify", pk=item.pk)
            status = refusal.http_status
        else:
            status = 400
    else:
        form = VerificationForm(initial={"item_version": item.version})
    context = stage_context(request, item, Stage.VERIFICATION)
    mine = selectors.verification_by(user=request.user, item=item)
    context.update({"form": form, "criteria": [(c, label, CRITERIA_KEYS[c]) for c, label in Criterion.choices],
                    "my_decision": mine, "judge": screening_view(item=item, user=request.user)})
    return render(request, "annotation/verify.html", context, status=status)


@annotator_required
def adjudication_list_view(request):
    return render(request, "annotation/adjudication_list.html", {"adjudications": selectors.open_adjudications()})


@annotator_required
def adjudication_view(request, pk: int):
    detail = selectors.adjudication_detail(adjudication_id=pk)
    if detail is None:
        raise Http404("no such adjudication")
    status = 200
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        if form.is_valid():
            _, refusal = attempt(lambda: services.adjudication_resolve(
                adjudication_id=pk, user=request.user, decision=form.cleaned_data["decision"],
                comment=form.cleaned_data["comment"]), form=form)
            if refusal is None:
                messages.success(request, f"{detail['item']}: resolved.")
                return redirect("annotation:adjudication_list")
            status = refusal.http_status
        else:
            status = 400
    else:
        form = AdjudicationForm()
    return render(request, "annotation/adjudication.html", {
        **detail, "options": item_options(detail["item"]), "form": form, "criteria_labels": dict(Criterion.choices)},
        status=status)
