"""The "Test connection" button of the endpoint forms (create and edit): the settings typed so far are checked as
a launch would check them, and the answer is swapped in beside the button (htmx); nothing is saved."""
from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_POST

from evaluation.forms.endpoints import EndpointCheckForm
from evaluation.services.endpoint_check import endpoint_connection_check
from foundation.error_mapping import REFUSED, error_text
from foundation.roles import researcher_required


@researcher_required
@require_POST
def endpoint_check_view(request):
    """The check's outcome as a fragment: connected (how, the models served, warnings) or why not (always 200:
    the fragment says it, the page stays as it is)."""
    form = EndpointCheckForm(request.POST)
    context: dict = {"ok": False}
    if not form.is_valid():
        context["problems"] = [f"{form.fields[name].label or name}: {' '.join(errors)}" if name != "__all__"
                               else " ".join(errors) for name, errors in form.errors.items()]
    else:
        data = form.cleaned_data
        try:
            found = endpoint_connection_check(kind=data["kind"], base_url=data["base_url"], model=data["model"],
                                              api_key_env=data["api_key_env"], timeout_s=data["timeout_s"])
        except REFUSED as exc:
            context["problems"] = [error_text(exc)]
        else:
            context.update({"ok": True, "found": found, "model": data["model"], "base_url": data["base_url"]})
    return render(request, "evaluation/_endpoint_check.html", context)
