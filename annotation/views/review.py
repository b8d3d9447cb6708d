"""Review: approve and publish an item, or send it back to an earlier stage."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext

from annotation import selectors, services
from annotation.clue_graph.editing import editable_graph
from annotation.forms import ReviewForm
from annotation.models import Item, ReviewAction, Stage
from annotation.views.clue_graph import graph_context
from annotation.views.common import after_decision, attempt, stage_context
from foundation.roles import annotator_required


@annotator_required
def review_view(request, pk: int):
    """The review form; once the annotator has reviewed the item, their review read-only."""
    item = get_object_or_404(Item, pk=pk)
    mine = selectors.review_by(user=request.user, item=item)
    status = 200
    if request.method == "POST" and mine is not None:
        messages.info(request, gettext("You had already reviewed %(item)s (“%(action)s”); a review is final and "
                                       "was not changed.") % {"item": item, "action": mine.get_action_display()})
        return redirect("annotation:review", pk=item.pk)
    if request.method == "POST":
        form = ReviewForm(request.POST)
        if form.is_valid():
            action = form.cleaned_data["action"]
            _, refusal = attempt(lambda: services.review_submit(
                item_id=item.pk, user=request.user, action=action,
                send_back_to=form.cleaned_data["send_back_to"], comment=form.cleaned_data["comment"],
                item_version=form.cleaned_data["item_version"]), form=form)
            if refusal is None:
                done = ("approved and published" if action == ReviewAction.APPROVE
                        else f"sent back to {Stage(form.cleaned_data['send_back_to']).label}")
                return after_decision(request, Stage.REVIEW, stay=reverse("annotation:queue"),
                                      message=f"{item}: {done}.")
            status = refusal.http_status
        else:
            status = 400
    else:
        form = ReviewForm(initial={"item_version": item.version})
    graph = editable_graph(item.evidence, item.reasoning)
    context = stage_context(request, item, Stage.REVIEW)
    context.update(graph_context(item, graph, base_version=item.version))
    context.update({"form": form, "my_review": mine, "history_url": reverse("annotation:history", args=[item.pk]),
                    "since_verification": selectors.item_changes_since_stage(item=item, stage=Stage.VERIFICATION)})
    return render(request, "annotation/review.html", context, status=status)
