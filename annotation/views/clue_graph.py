"""The clue-graph editor: rows of clues and steps, anchors in the context, checks, the drawing, drafts."""
from __future__ import annotations

import json

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST
from django_htmx.http import reswap, retarget

from detectbench_web.roles import annotator_required

from .. import clue_graph, selectors, services
from ..errors import StaleVersion
from ..forms import GRAPH_META_KEYS, ClueGraphForm
from ..clue_graph.drawing import build_graph, render_svg
from ..clue_graph.editing import EditableGraph, EditableStep, editable_graph
from ..highlight import segments
from ..item_checks import reaches_answer
from ..models import Item, Stage
from .common import attempt, stage_context


def _graph_meta(graph: EditableGraph) -> str:
    data = graph.to_data()
    return json.dumps({k: data[k] for k in GRAPH_META_KEYS})


def graph_context(item, graph: EditableGraph, *, base_version: int) -> dict:
    """Everything the clue-graph screen shows for a graph: anchors, checks, rows, the SVG."""
    parsed = graph.parsed()
    anchors = clue_graph.anchor_clues([t for t, _ in graph.clues], item.context, min_score=0.0)
    clue_rows, spans = [], []
    for i, ((text, implication), anchor) in enumerate(zip(graph.clues, anchors)):
        state = ("unanchored" if anchor is None or anchor.score < clue_graph.ANCHOR_MIN_SCORE
                 else "exact" if anchor.exact else "fuzzy")
        if anchor is not None and state != "unanchored":
            spans.append((anchor.start, anchor.end, i, anchor.exact))
        clue_rows.append({"index": i, "number": i + 1, "text": text, "implication": implication, "state": state,
                          "anchor": anchor})
    issues = [issue for issue in clue_graph.check_graph(parsed, item.context)
              if issue.kind not in ("unanchored_clue", "fuzzy_clue")]
    final = graph.steps[-1].output if graph.steps else None
    if graph.steps and not reaches_answer(final, item.options, item.answer_index):
        issues.append(clue_graph.Issue("no_answer", f"the last conclusion does not name the answer "
                                                    f"“{item.answer_text}”", section="reasoning"))
    choices, earlier = [], []
    for row in clue_rows:
        choices.append((row["text"], f"{row['number']}: {row['text']}"))
        choices.append((row["implication"], f"{row['number']} ⇒ {row['implication']}"))
    step_rows = []
    for i, step in enumerate(graph.steps):
        offered = choices + [(o, f"S{j + 1} ⇒ {o}") for j, o in enumerate(earlier)]
        values = {v for v, _ in offered}
        step_rows.append({"index": i, "number": i + 1, "output": step.output, "header": step.header or "",
                          "options": [(v, label, v in step.inputs) for v, label in offered if v.strip()],
                          "extra": " + ".join(x for x in step.inputs if x not in values)})
        earlier.append(step.output)
    drawn = build_graph(graph.clues, [(s.inputs, s.output) for s in graph.steps],
                        unanchored=[r["index"] for r in clue_rows if r["state"] == "unanchored"],
                        fuzzy=[r["index"] for r in clue_rows if r["state"] == "fuzzy"])
    return {
        "item": item, "base_version": base_version, "meta": _graph_meta(graph),
        "clue_rows": clue_rows, "step_rows": step_rows, "issues": issues,
        "segments": segments(item.context, spans),
        "svg": mark_safe(render_svg(drawn, title=f"Clue graph of {item}")),  # noqa: S308 - every text is escaped
        "unanchored": sum(r["state"] == "unanchored" for r in clue_rows),
        "fuzzy": sum(r["state"] == "fuzzy" for r in clue_rows),
    }


def _snap_span(context: str, start: int, end: int) -> tuple[int, int]:
    start, end = max(0, start), min(len(context), end)
    while start < end and context[start].isspace():
        start += 1
    while end > start and context[end - 1] in " \n\t.,;:":
        end -= 1
    return start, end


def _apply_action(item, graph: EditableGraph, post) -> tuple[EditableGraph, str | None]:
    """Structural edits of the editor: add/remove rows, replace a clue by a context span."""
    action = post.get("action", "")
    name, _, rest = action.partition(":")
    if name == "add_clue":
        graph.clues.append(("", ""))
    elif name == "remove_clue" and rest.isdigit() and int(rest) < len(graph.clues):
        graph.clues.pop(int(rest))
    elif name == "add_step":
        graph.steps.append(EditableStep([], ""))
    elif name == "remove_step" and rest.isdigit() and int(rest) < len(graph.steps):
        graph.steps.pop(int(rest))
    elif name in ("fix", "select"):
        try:
            if name == "fix":
                index, start, end = (int(x) for x in rest.split(":"))
                text = None
            else:
                index, start, end = (int(post.get(key) or 0) for key in ("fix_clue", "fix_start", "fix_end"))
                text = post.get("fix_text", "")
        except ValueError:
            return graph, "the span to use is not valid: pick the text again"
        if not 0 <= index < len(graph.clues):
            return graph, "choose a clue first"
        if text and item.context[start:end] != text:
            # Offsets from the browser can drift (e.g. line endings): fall back to finding the selected text.
            found = item.context.find(text.strip())
            if found < 0:
                return graph, "the selected text is not part of the context"
            start, end = found, found + len(text.strip())
        start, end = _snap_span(item.context, start, end)
        if start >= end:
            return graph, "empty selection"
        graph = graph.with_clue_text(index, item.context[start:end])
    return graph, None


def _save_graph_draft(request, item, graph: EditableGraph, base_version: int) -> None:
    services.draft_save(item_id=item.pk, user=request.user, stage=Stage.CLUE_GRAPH, base_version=base_version,
                        data=graph.to_data())


@annotator_required
def clue_graph_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    conflict, status, error = None, 200, None
    draft = selectors.draft_for(user=request.user, item=item, stage=Stage.CLUE_GRAPH)
    if request.method == "POST":
        form = ClueGraphForm(request.POST)
        form.is_valid()
        graph, finish = form.graph, bool(request.POST.get("finish"))
        base_version = form.cleaned_data.get("base_version")
        if form.errors:
            # The annotator's text stays in the editor beside the message; nothing is saved.
            error, status, base_version = "; ".join(form.named_errors()), 400, base_version or ""
        else:
            saved, refusal = attempt(lambda: services.clue_graph_save(
                item_id=item.pk, base_version=base_version, graph=graph, user=request.user,
                note=form.cleaned_data["note"].strip(), finish=finish))
            if refusal is None:
                if finish:
                    messages.success(request, f"{item}: clue graph done, sent to review.")
                    return redirect("annotation:queue")
                messages.success(request, f"Saved version {saved.version}.")
                return redirect("annotation:clue_graph", pk=item.pk)
            status = refusal.http_status
            if isinstance(refusal, StaleVersion):
                _save_graph_draft(request, item, graph, base_version)
                item = refusal.item
                conflict = selectors.item_conflict(item=item, base_version=base_version)
                base_version = item.version  # saving again, after seeing the diff, starts from the stored version
            else:
                error = refusal.message
    elif draft is not None:
        graph, base_version = EditableGraph.from_data(draft.data), draft.base_version
    else:
        graph, base_version = editable_graph(item.evidence, item.reasoning), item.version
    context = stage_context(request, item, Stage.CLUE_GRAPH)
    context.update(graph_context(item, graph, base_version=base_version))
    context.update({"conflict": conflict, "error": error, "draft": draft if request.method == "GET" else None})
    return render(request, "annotation/clue_graph.html", context, status=status)


def _graph_draft_response(request, item, *, partial: str, apply_action: bool):
    """The editor's htmx calls: read the rows, optionally apply a row/fix action, autosave the draft, redraw.

    Invalid input (oversized text, a damaged hidden state, no base version) is not
    saved: the preview shows the message (422) and the editor in the browser keeps
    the annotator's text.
    """
    form = ClueGraphForm(request.POST)
    if not form.is_valid():
        return retarget(reswap(render(request, "annotation/clue_graph.html#preview_error",
                                      {"error": "; ".join(form.named_errors())}, status=422), "innerHTML"),
                        "#cg-preview")
    graph, error = _apply_action(item, form.graph, request.POST) if apply_action else (form.graph, None)
    base_version = form.cleaned_data["base_version"]
    _save_graph_draft(request, item, graph, base_version)
    context = {**stage_context(request, item, Stage.CLUE_GRAPH),
               **graph_context(item, graph, base_version=base_version), "error": error,
               "draft_saved": timezone.now()}
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
