"""Question verification (keep/delete with the Table-7 criteria) and adjudication of disagreements."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext

from annotation import selectors, services
from annotation.forms import CRITERIA_KEYS, AdjudicationForm, VerificationForm
from annotation.models import Criterion, Decision, Item, Stage
from annotation.selectors.belief import screening_view
from annotation.services.belief_sightings import belief_sightings_record
from annotation.views.common import after_decision, attempt, item_options, stage_context
from foundation.roles import annotator_required


@annotator_required
def verify_view(request, pk: int):
    """The keep/delete form; once the annotator has decided, their decision read-only (it is final)."""
    item = get_object_or_404(Item, pk=pk)
    mine = selectors.verification_by(user=request.user, item=item)
    status = 200
    if request.method == "POST" and mine is not None:
        # A second submit (another tab, a stale page) changes nothing: say so on the read-only page.
        messages.info(request, gettext("You had already decided “%(decision)s” on %(item)s; a decision is final "
                                       "and was not changed.") % {"decision": mine.get_decision_display(), "item": item})
        return redirect("annotation:verify", pk=item.pk)
    if request.method == "POST":
        form = VerificationForm(request.POST)
        if form.is_valid():
            decision = form.cleaned_data["decision"]
            _, refusal = attempt(lambda: services.verification_submit(
                item_id=item.pk, user=request.user, decision=decision,
                criteria=form.cleaned_data["criteria"], comment=form.cleaned_data["comment"],
                item_version=form.cleaned_data["item_version"]), form=form)
            if refusal is None:
                return after_decision(request, Stage.VERIFICATION, stay=reverse("annotation:verify", args=[item.pk]),
                                      message=f"Saved: {Decision(decision).label.lower()} for {item}.")
            status = refusal.http_status
        else:
            status = 400
    else:
        form = VerificationForm(initial={"item_version": item.version})
    context = stage_context(request, item, Stage.VERIFICATION)
    chosen = mine.criteria if mine is not None else (form["criteria"].value() or [])
    judge = screening_view(item=item, user=request.user)
    belief_sightings_record(user=request.user, shown=judge["labels"] if judge else [], via="verify")
    context.update({"form": form, "my_decision": mine, "judge": judge,
                    "criteria": [(c, label, CRITERIA_KEYS[c], c in chosen) for c, label in Criterion.choices]})
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
                messages.success(request, gettext("%(item)s: resolved.") % {"item": detail["item"]})
                return redirect("annotation:adjudication_list")
            status = refusal.http_status
        else:
            status = 400
    else:
        form = AdjudicationForm()
    return render(request, "annotation/adjudication.html", {
        **detail, "options": item_options(detail["item"]), "form": form, "criteria_labels": dict(Criterion.choices)},
        status=status)
