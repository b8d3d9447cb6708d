"""Review: approve and publish an item, or send it back to an earlier stage."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from detectbench_web.roles import annotator_required

from .. import selectors, services
from ..forms import ReviewForm
from ..clue_graph.editing import editable_graph
from ..models import Item, Stage
from .clue_graph import graph_context
from .common import attempt, stage_context


@annotator_required
def review_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    status = 200
    if request.method == "POST":
        form = ReviewForm(request.POST)
        if form.is_valid():
            _, refusal = attempt(lambda: services.review_submit(
                item_id=item.pk, user=request.user, action=form.cleaned_data["action"],
                send_back_to=form.cleaned_data["send_back_to"], comment=form.cleaned_data["comment"],
                item_version=form.cleaned_data["item_version"]), form=form)
            if refusal is None:
                messages.success(request, f"{item}: review saved.")
                return redirect("annotation:queue")
            status = refusal.http_status
        else:
            status = 400
    else:
        form = ReviewForm(initial={"item_version": item.version})
    graph = editable_graph(item.evidence, item.reasoning)
    context = stage_context(request, item, Stage.REVIEW)
    context.update(graph_context(item, graph, base_version=item.version))
    context.update({"form": form, "history_url": reverse("annotation:history", args=[item.pk]),
                    "since_verification": selectors.item_changes_since_stage(item=item, stage=Stage.VERIFICATION)})
    return render(request, "annotation/review.html", context, status=status)
