"""Question rewriting: the editor, its autosaved draft, the conflict page after a stale save."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from detectbench_web.roles import annotator_required

from .. import selectors, services
from ..diffing import content_diff
from ..errors import StaleVersion
from ..forms import RewriteForm
from ..item_checks import option_checks
from ..models import Item, Stage
from .common import attempt, stage_context


def _rewrite_initial(item, data: dict | None = None) -> dict:
    source = data or {"context": item.context, "question": item.question, "options": item.options,
                      "answer_index": item.answer_index}
    initial = {"context": source["context"], "question": source["question"],
               "answer_index": source["answer_index"], "base_version": (data or {}).get("base_version", item.version)}
    for i, option in enumerate(source["options"]):
        initial[f"option_{i}"] = option
    return initial


@annotator_required
def rewrite_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    conflict = None
    status = 200
    draft = selectors.draft_for(user=request.user, item=item, stage=Stage.REWRITE)
    if request.method == "POST":
        form = RewriteForm(request.POST)
        if form.is_valid():
            base_version, finish = form.cleaned_data["base_version"], bool(request.POST.get("finish"))
            changes = form.changes()
            saved, refusal = attempt(lambda: services.item_edit(
                item_id=item.pk, base_version=base_version, changes=changes, user=request.user, stage=Stage.REWRITE,
                finish=finish, note=form.cleaned_data["note"].strip() or "rewritten"), form=form)
            if refusal is None:
                if finish:
                    messages.success(request, f"{item}: rewrite done.")
                    return redirect("annotation:queue")
                messages.success(request, f"Saved version {saved.version}.")
                return redirect("annotation:rewrite", pk=item.pk)
            status = refusal.http_status
            if isinstance(refusal, StaleVersion):
                # Never overwrite: keep the user's text as a draft and show what the other person changed.
                services.draft_save(item_id=item.pk, user=request.user, stage=Stage.REWRITE,
                                    base_version=base_version, data={**changes, "base_version": base_version})
                item = refusal.item
                conflict = selectors.item_conflict(item=item, base_version=base_version)
                # The next save, made after seeing the other change, starts from the stored version.
                form = RewriteForm({**request.POST.dict(), "base_version": item.version})
                form.is_valid()
        else:
            status = 400
    else:
        form = RewriteForm(initial=_rewrite_initial(item, draft.data if draft else None),
                           option_count=len((draft.data if draft else {}).get("options") or item.options))
    context = stage_context(request, item, Stage.REWRITE)
    context.update({
        "form": form, "conflict": conflict, "draft": draft if request.method == "GET" else None,
        "previous_diff": selectors.item_changes_since_previous(
            item=item, fields=["context", "question", "options", "answer_index"]),
        "checks": option_checks(item.options, item.answer_index),
    })
    return render(request, "annotation/rewrite.html", context, status=status)


@annotator_required
@require_POST
def rewrite_draft_view(request, pk: int):
    """Autosave while typing (htmx): keep the draft, show its diff against the stored version.

    An unfinished text (a missing question, a duplicate option) is kept as a draft;
    only oversized input is refused (422, the message names the field).
    """
    item = get_object_or_404(Item, pk=pk)
    form = RewriteForm(request.POST)
    form.is_valid()
    if form.size_errors():
        return render(request, "annotation/rewrite.html#draft_status", {"draft_errors": form.size_errors()},
                      status=422)
    data = form.draft_content(default_answer_index=item.answer_index)
    base_version = form.cleaned_data.get("base_version") or item.version
    draft = services.draft_save(item_id=item.pk, user=request.user, stage=Stage.REWRITE, base_version=base_version,
                                data={**data, "base_version": base_version})
    return render(request, "annotation/rewrite.html#draft_status", {
        "draft": draft, "item": item, "live_diff": content_diff(item.content(), data, list(data)),
        "checks": option_checks([o.strip() for o in data["options"]], data["answer_index"]),
    })
