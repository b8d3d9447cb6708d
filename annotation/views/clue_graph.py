"""The clue-graph editor: rows of clues and steps, anchors in the context, checks, the drawing, drafts."""
from __future__ import annotations

import json

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST
from django_htmx.http import reswap, retarget

from annotation import selectors, services
from annotation.clue_graph import editing
from annotation.clue_graph.drawing import render_svg
from annotation.clue_graph.editing import EditableGraph, editable_graph
from annotation.errors import StaleVersion
from annotation.forms import GRAPH_META_KEYS, ClueGraphForm, draft_order
from annotation.highlight import segments
from annotation.item_checks import clue_span_checks
from annotation.models import Item, Stage
from annotation.selectors.belief import clue_graph_draft
from annotation.services.belief_sightings import belief_sightings_record
from annotation.views.common import after_decision, attempt, stage_context
from foundation.numerals import is_number
from foundation.roles import annotator_required


def _graph_meta(graph: EditableGraph) -> str:
    data = graph.to_data()
    return json.dumps({k: data[k] for k in GRAPH_META_KEYS})


#: The words the screen uses for a clue's anchoring state, on the row's badge and in the preview alike.
ANCHOR_STATE_WORDS = {"exact": gettext_lazy("verbatim"), "fuzzy": gettext_lazy("approximate"),
                      "unanchored": gettext_lazy("not found")}


def graph_context(item, graph: EditableGraph, *, base_version: int) -> dict:
    """Everything the clue-graph screen shows for a graph: anchors, checks, rows, the SVG."""
    shown = editing.editor_view(graph, context=item.context, options=item.options, answer_index=item.answer_index,
                                answer_text=item.answer_text)
    # A clue covering most of the context is no key information: how much of it each clue covers (its span in
    # the context, or its own text where that is longer or it is not found there).
    covered = [(row.number, max(len(row.text.strip()), row.anchor.end - row.anchor.start
                                if row.anchor is not None and row.state != "unanchored" else 0))
               for row in shown.clue_rows if row.text.strip()]
    warnings = clue_span_checks(item.context, covered)
    return {
        "item": item, "base_version": base_version, "meta": _graph_meta(graph),
        "clue_rows": [{"row": row, "state": row.state, "state_words": ANCHOR_STATE_WORDS[row.state]}
                      for row in shown.clue_rows],
        "step_rows": [{"row": row, "inputs": row.inputs} for row in shown.step_rows],
        "issues": shown.issues, "warnings": warnings,
        "segments": segments(item.context, shown.spans),
        # every text is escaped
        "svg": mark_safe(render_svg(shown.drawn, title=_("Clue graph of %(item)s") % {"item": item})),  # noqa: S308
        "unanchored": shown.unanchored,
        "fuzzy": shown.fuzzy,
        # "No problems" only when the checks find none, every clue is verbatim in the context and none covers most of it.
        "all_clear": not shown.issues and not shown.unanchored and not shown.fuzzy and not warnings,
    }


def _save_graph_draft(request, item, graph: EditableGraph, base_version: int, *, explicit: bool = False) -> bool:
    """Keep the graph as the annotator's draft; False when a newer save of theirs came first (not kept)."""
    page, seq = draft_order(request.POST, explicit=explicit)
    return services.draft_save(item_id=item.pk, user=request.user, stage=Stage.CLUE_GRAPH,
                               base_version=base_version, data=graph.to_data(), page=page, seq=seq) is not None


@annotator_required
def clue_graph_view(request, pk: int):
    """The editor. A refused save keeps the graph as a draft and redirects (post/redirect/get); input that the
    page itself never sends (oversized, a damaged hidden state) is answered at once with 400."""
    item = get_object_or_404(Item, pk=pk)
    draft = selectors.draft_for(user=request.user, item=item, stage=Stage.CLUE_GRAPH)
    if request.method == "POST":
        form = ClueGraphForm(request.POST)
        form.is_valid()
        graph, finish = form.graph, bool(request.POST.get("finish"))
        base_version = form.cleaned_data.get("base_version")
        if form.errors:
            # The annotator's text stays in the editor beside the message; nothing is saved.
            context = {**stage_context(request, item, Stage.CLUE_GRAPH),
                       **graph_context(item, graph, base_version=base_version or ""),
                       "error": "; ".join(form.named_errors()), "conflict": None, "draft": None, "judge_draft": None,
                       "draft_page": services.page_stamp()}
            return render(request, "annotation/clue_graph.html", context, status=400)
        saved, refusal = attempt(lambda: services.clue_graph_save(
            item_id=item.pk, base_version=base_version, graph=graph, user=request.user,
            note=form.cleaned_data["note"].strip(), finish=finish))
        if refusal is None:
            if finish:
                return after_decision(request, Stage.CLUE_GRAPH, stay=reverse("annotation:queue"),
                                      message=f"{item}: clue graph done, sent to review.")
            messages.success(request, _("Saved version %(n)s.") % {"n": saved.version})
            return redirect("annotation:clue_graph", pk=item.pk)
        _save_graph_draft(request, item, graph, base_version, explicit=True)
        url = reverse("annotation:clue_graph", args=[item.pk])
        if isinstance(refusal, StaleVersion):
            messages.error(request, _("Not saved: someone else changed this item meanwhile."))
            return redirect(f"{url}?conflict={base_version}")
        messages.error(request, _("Not saved: %(why)s") % {"why": refusal.message})
        return redirect(f"{url}?refused=1")
    conflict = None
    if draft is not None:
        graph, base_version = EditableGraph.from_data(draft.data), draft.base_version
    else:
        graph, base_version = editable_graph(item.evidence, item.reasoning), item.version
    conflict_from = request.GET.get("conflict", "")
    if is_number(conflict_from) and int(conflict_from) < item.version:
        conflict = selectors.item_conflict(item=item, base_version=int(conflict_from))
        base_version = item.version  # saving again, after seeing the diff, starts from the stored version
    context = stage_context(request, item, Stage.CLUE_GRAPH)
    judge_draft = clue_graph_draft(item=item, user=request.user)
    if context["in_stage"]:  # the page shows the draft only then
        belief_sightings_record(user=request.user, shown=[judge_draft], via="clue_graph")
    context.update(graph_context(item, graph, base_version=base_version))
    context.update({"conflict": conflict, "error": None, "draft_page": services.page_stamp(),
                    "draft": draft if not conflict and "refused" not in request.GET else None,
                    "judge_draft": judge_draft})
    return render(request, "annotation/clue_graph.html", context)


def _graph_draft_response(request, item, *, partial: str, apply_action: bool):
    """The editor's htmx calls: read the rows, optionally apply a row/fix action, autosave the draft, redraw.

    Invalid input (oversized text, a damaged hidden state, no base version) is not
    saved: the preview shows the message (422) and the editor in the browser keeps
    the annotator's text.
    """
    form = ClueGraphForm(request.POST)
    refusal = services.slot_refusal(item=item, stage=Stage.CLUE_GRAPH, user=request.user)
    if refusal or not form.is_valid():  # no draft is kept for someone who may not change the item now
        return retarget(reswap(render(request, "annotation/clue_graph.html#preview_error",
                                      {"error": refusal or "; ".join(form.named_errors())},
                                      status=409 if refusal else 422), "innerHTML"), "#cg-preview")
    graph, error = editing.apply_action(form.graph, item.context, request.POST) if apply_action else (form.graph, None)
    base_version = form.cleaned_data["base_version"]
    kept = _save_graph_draft(request, item, graph, base_version)
    context = {**stage_context(request, item, Stage.CLUE_GRAPH),
               **graph_context(item, graph, base_version=base_version), "error": error,
               "draft_saved": timezone.now() if kept else None, "draft_not_kept": not kept,
               "draft_page": draft_order(request.POST)[0], "oob": partial.endswith("#preview")}
    return render(request, partial, context)


@annotator_required
@require_POST
def clue_graph_preview_view(request, pk: int):
    """While editing (htmx): autosave the draft, redraw highlights, checks and the SVG."""
    return _graph_draft_response(request, get_object_or_404(Item, pk=pk), partial="annotation/clue_graph.html#preview",
                                 apply_action=False)


@annotator_required
@require_POST
def clue_graph_edit_view(request, pk: int):
    """Row and fix actions (htmx): return the whole editor with the change applied (autosaved as a draft)."""
    return _graph_draft_response(request, get_object_or_404(Item, pk=pk), partial="annotation/clue_graph.html#editor",
                                 apply_action=True)
