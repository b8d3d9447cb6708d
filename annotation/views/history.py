"""An item's revision history with diffs, and reverting to an earlier revision."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from detectbench_web.roles import annotator_required

from .. import selectors, services
from ..forms import RevertForm
from ..models import Item, ItemRevision
from .common import conflict_details


@annotator_required
def history_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    return render(request, "annotation/history.html", {"item": item, "entries": selectors.item_history(item=item)})


@annotator_required
@require_POST
def revert_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    form = RevertForm(request.POST)
    if not form.is_valid():
        return HttpResponse("bad revert request", status=400)
    try:
        services.item_revert(item_id=item.pk, revision_number=form.cleaned_data["revision"],
                             base_version=form.cleaned_data["base_version"], user=request.user)
    except services.StaleVersion as exc:
        messages.error(request, f"Not reverted: the item changed to version {exc.item.version} meanwhile. "
                                f"Look at the newest change first.")
        return render(request, "annotation/history.html", {
            "item": exc.item, "entries": selectors.item_history(item=exc.item),
            "conflict": conflict_details(exc.item, form.cleaned_data["base_version"])}, status=409)
    except ItemRevision.DoesNotExist:
        raise Http404("no such revision")
    messages.success(request, f"Reverted to revision {form.cleaned_data['revision']} (as a new revision).")
    return redirect("annotation:history", pk=item.pk)
