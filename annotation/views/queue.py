"""The annotator's work queue: stages with their counts, the next item of a stage, giving a lease back."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from detectbench_web.roles import annotator_required

from .. import selectors, services
from ..models import Item, Stage


@annotator_required
def queue_view(request):
    return render(request, "annotation/queue.html", {"stages": selectors.queue_overview(user=request.user)})


@annotator_required
@require_POST
def next_item_view(request, stage: str):
    if stage not in Stage.values:
        raise Http404("unknown stage")
    lease = services.lease_next(user=request.user, stage=stage)
    if lease is None:
        messages.info(request, f"No more items for you in {Stage(stage).label}.")
        return redirect("annotation:queue")
    return redirect(Stage(stage).screen, pk=lease.item_id)


@annotator_required
@require_POST
def release_view(request, pk: int, stage: str):
    services.lease_release(item_id=get_object_or_404(Item, pk=pk).pk, stage=stage, user=request.user)
    if request.POST.get("next"):
        return next_item_view(request, stage)
    return redirect("annotation:queue")
