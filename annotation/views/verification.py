"""Question verification (keep/delete with the Table-7 criteria) and adjudication of disagreements."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from detectbench_web.roles import annotator_required

from .. import selectors, services
from ..forms import CRITERIA_KEYS, AdjudicationForm, VerificationForm
from ..models import Adjudication, AnnotatorLeaseStatus, AdjudicationStatus, Criterion, Item, Stage
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
    mine = item.verification_decisions.filter(annotator=request.user).exclude(
        lease__status=AnnotatorLeaseStatus.SUPERSEDED).first()
    context.update({"form": form, "criteria": [(c, label, CRITERIA_KEYS[c]) for c, label in Criterion.choices],
                    "my_decision": mine})
    return render(request, "annotation/verify.html", context, status=status)


@annotator_required
def adjudication_list_view(request):
    return render(request, "annotation/adjudication_list.html", {"adjudications": selectors.open_adjudications()})


@annotator_required
def adjudication_view(request, pk: int):
    adjudication = get_object_or_404(Adjudication.objects.select_related("item"), pk=pk)
    status = 200
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        if form.is_valid():
            _, refusal = attempt(lambda: services.adjudication_resolve(
                adjudication_id=pk, user=request.user, decision=form.cleaned_data["decision"],
                comment=form.cleaned_data["comment"]), form=form)
            if refusal is None:
                messages.success(request, f"{adjudication.item}: resolved.")
                return redirect("annotation:adjudication_list")
            status = refusal.http_status
        else:
            status = 400
    else:
        form = AdjudicationForm()
    decisions = adjudication.item.verification_decisions.exclude(lease__status=AnnotatorLeaseStatus.SUPERSEDED).select_related(
        "annotator")
    return render(request, "annotation/adjudication.html", {
        "adjudication": adjudication, "item": adjudication.item, "options": item_options(adjudication.item),
        "decisions": decisions, "form": form, "open": adjudication.status == AdjudicationStatus.OPEN,
        "criteria_labels": dict(Criterion.choices)}, status=status)
