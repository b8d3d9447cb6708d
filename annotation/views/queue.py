"""The annotator's work queue: stages with their counts, the next item of a stage, giving a lease back, and the
auto-advance setting."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation import selectors, services
from annotation.models import Item, Stage
from annotation.views.common import AUTO_ADVANCE_KEY, auto_advance, next_item
from foundation.roles import annotator_required


@annotator_required
def queue_view(request):
    return render(request, "annotation/queue.html", {"queue": selectors.queue_overview(user=request.user),
                                                     "auto_advance": auto_advance(request)})


@annotator_required
@require_POST
def next_item_view(request, stage: str):
    if stage not in Stage.values:
        raise Http404("unknown stage")
    return next_item(request, stage)


@annotator_required
@require_POST
def release_view(request, pk: int, stage: str):
    services.lease_release(item_id=get_object_or_404(Item, pk=pk).pk, stage=stage, user=request.user)
    if request.POST.get("next"):
        return next_item_view(request, stage)
    return redirect("annotation:queue")


@annotator_required
@require_POST
def auto_advance_view(request):
    """Turn auto-advance on or off (`on` = "1" / "0") and go back to the page the form was on."""
    on = request.POST.get("on") == "1"
    request.session[AUTO_ADVANCE_KEY] = on
    messages.info(request, gettext("After a decision you go straight to the next item.") if on
                  else gettext("After a decision you stay on the item; press n for the next one."))
    return HttpResponseRedirect(safe_back(request, request.POST.get("back", "")) or reverse("annotation:queue"))


def safe_back(request, back: str) -> str:
    """`back` when it is a path of this site ("/annotation/items/7/verify/?x=1"), else "" (the caller's default).

    Only a path: anything else a client may send ("abc", "0", an address of another site, "//host/") is no page of
    ours, and handed to `redirect()` a bare word is even taken as the name of a view to look up (a 500 when none
    has it), so the path is redirected to as it is, never reversed."""
    if not back.startswith("/") or back.startswith(("//", "/\\")):
        return ""
    allowed = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return back if allowed else ""
