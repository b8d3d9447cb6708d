"""Question rewriting: the editor, its autosaved draft, the conflict shown after a stale save.

The Checks panel is computed from the text in the form (the stored item, the
restored draft or what is being typed) with the same function the save runs
(`item_checks.option_checks`, through `text_checks`), so the page and the save
cannot disagree. A refused save keeps the text as a draft and redirects
(post/redirect/get): reloading the page never re-posts the form.
"""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation import selectors, services
from annotation.diffing import content_diff, merge_three
from annotation.errors import StaleVersion
from annotation.forms import RewriteForm, draft_order
from annotation.item_checks import option_checks
from annotation.models import Item, Stage
from annotation.views.common import after_decision, attempt, stage_context
from foundation.numerals import is_number
from foundation.roles import annotator_required

MERGED_FIELDS = ("context", "question", "options", "answer_index")


def text_checks(content: dict) -> list:
    """Rule 2.4 on a text as typed: the options as RewriteForm reads them (stripped), the chosen answer."""
    return option_checks([(o or "").strip() for o in content["options"]], content.get("answer_index"))


def _shown_content(item, draft) -> dict:
    """The text the form shows: the draft when there is one, else the stored item."""
    if draft is not None:
        return {"context": draft.data.get("context", ""), "question": draft.data.get("question", ""),
                "options": list(draft.data.get("options") or []), "answer_index": draft.data.get("answer_index")}
    return {"context": item.context, "question": item.question, "options": list(item.options),
            "answer_index": item.answer_index}


def _form_for(content: dict, base_version: int) -> RewriteForm:
    initial = {"context": content["context"], "question": content["question"],
               "answer_index": content["answer_index"], "base_version": base_version}
    for i, option in enumerate(content["options"]):
        initial[f"option_{i}"] = option
    return RewriteForm(initial=initial, option_count=len(content["options"]))


def _refused(request, item, form: RewriteForm, messages_: list[str], *, conflict_from: int | None = None):
    """Keep the typed text as a draft, say why it was not saved, and show the page again by GET."""
    base_version = form.cleaned_data.get("base_version") or item.version
    data = form.draft_content(default_answer_index=item.answer_index)
    if "answer_index" in form.errors:
        data["answer_index"] = None  # no valid choice was made: the restored form shows none, its checks say so
    page, seq = draft_order(request.POST, explicit=True)
    services.draft_save(item_id=item.pk, user=request.user, stage=Stage.REWRITE, base_version=base_version,
                        data={**data, "base_version": base_version}, page=page, seq=seq)
    for message in messages_:
        messages.error(request, _("Not saved: %(why)s") % {"why": message})
    query = f"?conflict={conflict_from}" if conflict_from is not None else "?refused=1"
    return redirect(reverse("annotation:rewrite", args=[item.pk]) + query)


@annotator_required
def rewrite_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    if request.method == "POST":
        form = RewriteForm(request.POST)
        if not form.is_valid():
            if form.size_errors() or "base_version" in form.errors:
                # Only a client other than the page sends these (the page limits lengths): answer at once.
                return _page(request, item, form, status=400)
            return _refused(request, item, form, form.named_errors())
        base_version, finish = form.cleaned_data["base_version"], bool(request.POST.get("finish"))
        saved, refusal = attempt(lambda: services.item_edit(
            item_id=item.pk, base_version=base_version, changes=form.changes(), user=request.user,
            stage=Stage.REWRITE, finish=finish, note=form.cleaned_data["note"].strip() or "rewritten"))
        if refusal is None:
            if finish:
                return after_decision(request, Stage.REWRITE, stay=reverse("annotation:queue"),
                                      message=f"{item}: rewrite done.")
            messages.success(request, _("Saved version %(n)s.") % {"n": saved.version})
            return redirect("annotation:rewrite", pk=item.pk)
        if isinstance(refusal, StaleVersion):
            # Never overwrite: the text is kept as a draft and the page shows what the other person changed.
            return _refused(request, item, form, ["someone else changed this item meanwhile."],
                            conflict_from=base_version)
        return _refused(request, item, form, [refusal.message])
    return _page(request, item, None)


def _page(request, item, form: RewriteForm | None, *, status: int = 200):
    draft = selectors.draft_for(user=request.user, item=item, stage=Stage.REWRITE)
    conflict = None
    if form is None:
        content = _shown_content(item, draft)
        conflict_from = request.GET.get("conflict", "")
        if is_number(conflict_from) and int(conflict_from) < item.version:
            conflict = selectors.item_conflict(item=item, base_version=int(conflict_from))
            base_version = item.version  # saving again, after seeing the other change, starts from the stored version
            # Saving again must not undo their change where the text kept here was only the old one: merged three
            # ways against the version started from (the fields both changed keep this text and are named).
            base = selectors.revision_snapshot(item=item, number=int(conflict_from)) or {}
            merge = merge_three(base, item.content(), content, MERGED_FIELDS) if base else None
            if merge is not None:
                content = {**content, **merge.content}
                conflict.update(taken=merge.taken, clashes=merge.clashes)
        else:
            base_version = (draft.data.get("base_version") or draft.base_version) if draft else item.version
        form = _form_for(content, base_version)
    else:
        content = form.draft_content(default_answer_index=item.answer_index)
    context = stage_context(request, item, Stage.REWRITE)
    context.update({
        "form": form, "conflict": conflict, "draft_page": services.page_stamp(),
        "draft": draft if request.method == "GET" and not conflict and "refused" not in request.GET else None,
        "previous_diff": selectors.item_changes_since_previous(
            item=item, fields=["context", "question", "options", "answer_index"]),
        "checks": text_checks(content),
    })
    return render(request, "annotation/rewrite.html", context, status=status)


@annotator_required
@require_POST
def rewrite_draft_view(request, pk: int):
    """Autosave while typing (htmx): keep the draft, show its diff against the stored version and the checks
    of the text as typed.

    An unfinished text (a missing question, a duplicate option) is kept as a draft;
    only oversized input or a version no item has is refused (422, the message names the field).
    """
    item = get_object_or_404(Item, pk=pk)
    if refusal := services.slot_refusal(item=item, stage=Stage.REWRITE, user=request.user):
        # No draft is kept for someone who may not change the item now (the page says so before any typing).
        return render(request, "annotation/rewrite.html#draft_status", {"draft_errors": [refusal]}, status=409)
    form = RewriteForm(request.POST)
    form.is_valid()
    # A version sent that no item has (not a whole number, past the largest) is refused too: the draft would carry it.
    refused = form.size_errors() + (form.named_errors("base_version") if request.POST.get("base_version") else [])
    if refused:
        return render(request, "annotation/rewrite.html#draft_status", {"draft_errors": refused}, status=422)
    data = form.draft_content(default_answer_index=item.answer_index)
    base_version = form.cleaned_data.get("base_version") or item.version
    page, seq = draft_order(request.POST)
    draft = services.draft_save(item_id=item.pk, user=request.user, stage=Stage.REWRITE, base_version=base_version,
                                data={**data, "base_version": base_version}, page=page, seq=seq)
    return render(request, "annotation/rewrite.html#draft_response", {
        "draft": draft, "draft_not_kept": draft is None, "item": item,
        "live_diff": content_diff(item.content(), data, list(data)), "checks": text_checks(data), "oob": True,
    })
