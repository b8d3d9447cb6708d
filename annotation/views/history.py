"""An item's revision history with diffs, and reverting to an earlier revision."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation import selectors, services
from annotation.errors import StaleVersion
from annotation.forms import RevertForm
from annotation.models import Item
from annotation.views.common import attempt
from foundation.error_mapping import error_page
from foundation.roles import annotator_required


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
    base_version = form.cleaned_data["base_version"]
    _, refusal = attempt(lambda: services.item_revert(item_id=item.pk, revision_number=form.cleaned_data["revision"],
                                                      base_version=base_version, user=request.user))
    if isinstance(refusal, StaleVersion):
        messages.error(request, gettext("Not reverted: the item changed to version %(n)s meanwhile. Look at the "
                                        "newest change first.") % {"n": refusal.item.version})
        return render(request, "annotation/history.html", {
            "item": refusal.item, "entries": selectors.item_history(item=refusal.item),
            "conflict": selectors.item_conflict(item=refusal.item, base_version=base_version)},
            status=refusal.http_status)
    if refusal is not None:
        return error_page(request, refusal)
    messages.success(request, gettext("Reverted to revision %(n)s (as a new revision).") % {"n": form.cleaned_data["revision"]})
    return redirect("annotation:history", pk=item.pk)
