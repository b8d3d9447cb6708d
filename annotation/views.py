"""Item browser pages for annotators and researchers, and the researchers' import page."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render

from detectbench_web.roles import annotator_required, researcher_required

from . import clue_graph
from .forms import ItemFilterForm, ItemImportForm
from .highlight import segments
from .item_facts import QUESTION_TYPES
from .models import Item, ItemRevision, ItemStatus
from .selectors import item_facets, item_list, item_revisions
from .services import ImportRejected, item_import


@annotator_required
def item_list_view(request):
    form = ItemFilterForm(request.GET)
    form.is_valid()
    filters = form.cleaned_data if form.is_valid() else {}
    items = item_list(
        split=filters.get("split") or None,
        source=filters.get("source") or None,
        status=filters.get("status") or None,
        question_type=filters.get("question_type") or None,
        search=filters.get("q") or None,
    ).order_by("source", "split", "id").only(
        "id", "source", "external_id", "split", "question", "status", "question_type", "context_words",
        "evidence_count", "reasoning_steps", "version",
    )
    page = Paginator(items, 50).get_page(filters.get("page") or 1)
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form, "page": page, "filters": filters, "query": query.urlencode(),
        "facets": item_facets(), "statuses": ItemStatus.choices, "question_types": QUESTION_TYPES,
    }
    template = "annotation/item_list.html#results" if request.htmx else "annotation/item_list.html"
    return render(request, template, context)


@annotator_required
def item_detail_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    graph = clue_graph.parse_clue_graph(item.evidence, item.reasoning)
    anchors = clue_graph.anchor_clues(graph.clues, item.context)
    spans = [(a.start, a.end, a.clue_index, a.exact) for a in anchors if a is not None]
    clues = [
        {"clue": clue, "anchor": anchor, "number": i + 1}
        for i, (clue, anchor) in enumerate(zip(graph.clues, anchors))
    ]
    context = {
        "item": item,
        "graph": graph,
        "clues": clues,
        "segments": segments(item.context, spans),
        "issues": clue_graph.check_graph(graph, item.context),
        "options": _options(item),
        "revisions": item_revisions(item=item)[:20],
    }
    return render(request, "annotation/item_detail.html", context)


@researcher_required
def item_import_view(request):
    report = None
    errors = []
    if request.method == "POST":
        form = ItemImportForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                report = item_import(
                    stream=upload.file, file_name=upload.name, source=form.cleaned_data["source"],
                    split=form.cleaned_data["split"], user=request.user,
                    dry_run=form.cleaned_data["dry_run"], skip_invalid=form.cleaned_data["skip_invalid"],
                )
            except ImportRejected as exc:
                errors = exc.errors
                messages.error(request, f"{len(exc.errors)} invalid line(s) in {upload.name}: nothing was imported.")
            else:
                messages.success(request, f"{upload.name}: {report.summary()}")
                if not report.dry_run and not report.errors:
                    return redirect(f"{request.path}?done=1")
                errors = report.errors
    else:
        form = ItemImportForm()
    return render(request, "annotation/item_import.html", {"form": form, "report": report, "errors": errors[:200],
                                                           "error_count": len(errors)})


# --------------------------------------------------------------------------
# Curation workflow pages: queues, verification, rewrite, clue graph, review,
# adjudication, history; progress and agreement for researchers.

import csv  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402

from django.core.exceptions import ValidationError  # noqa: E402
from django.http import Http404, HttpResponse, JsonResponse  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402
from django.utils.safestring import mark_safe  # noqa: E402
from django.views.decorators.http import require_POST  # noqa: E402
from django_htmx.http import reswap, retarget  # noqa: E402

from . import selectors, services  # noqa: E402
from .diffing import content_diff  # noqa: E402
from .forms import (  # noqa: E402
    CRITERIA_KEYS, GRAPH_META_KEYS, AdjudicationForm, ClueGraphForm, EnterWorkflowForm, ReviewForm, RevertForm,
    RewriteForm, VerificationForm,
)
from .graph_drawing import build_graph, render_svg  # noqa: E402
from .graph_editing import EditableGraph, EditableStep, editable_graph  # noqa: E402
from .item_checks import option_checks, reaches_answer  # noqa: E402
from .models import Adjudication, AdjudicationStatus, Criterion, Stage  # noqa: E402

STAGE_SCREENS = {
    Stage.VERIFICATION: "annotation:verify",
    Stage.REWRITE: "annotation:rewrite",
    Stage.CLUE_GRAPH: "annotation:clue_graph",
    Stage.REVIEW: "annotation:review",
}


def _options(item) -> list[dict]:
    return [{"index": i, "text": t, "correct": i == item.answer_index} for i, t in enumerate(item.options)]


def _error_text(exc: Exception) -> str:
    """A refused service call (ValidationError, WorkflowError) as one message for the page."""
    return "; ".join(getattr(exc, "messages", [str(exc)]))


def _conflict(item, base_version: int) -> dict:
    """What the other person changed: the diff from the version the user started from to the stored one."""
    base = selectors.revision_snapshot(item=item, number=base_version) or {}
    return {"version": item.version, "base_version": base_version,
            "diffs": content_diff(base, item.content()),
            "authors": [r.author for r in item.revisions.filter(number__gt=base_version).select_related("author")]}


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
    return redirect(STAGE_SCREENS[stage], pk=lease.item_id)


@annotator_required
@require_POST
def release_view(request, pk: int, stage: str):
    assignment = selectors.assignment_for(user=request.user, item=get_object_or_404(Item, pk=pk), stage=stage)
    if assignment is not None:
        services.lease_release(assignment_id=assignment.pk, user=request.user)
    if request.POST.get("next"):
        return next_item_view(request, stage)
    return redirect("annotation:queue")


def _stage_context(request, item, stage: str) -> dict:
    return {"item": item, "stage": stage, "stage_label": Stage(stage).label, "options": _options(item),
            "assignment": selectors.assignment_for(user=request.user, item=item, stage=stage),
            "in_stage": item.status == stage}


@annotator_required
def verify_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    status = 200
    if request.method == "POST":
        form = VerificationForm(request.POST)
        if form.is_valid():
            try:
                services.verification_submit(
                    item_id=item.pk, user=request.user, decision=form.cleaned_data["decision"],
                    criteria=form.cleaned_data["criteria"], comment=form.cleaned_data["comment"],
                    item_version=form.cleaned_data["item_version"])
            except services.StaleVersion as exc:
                form.add_error(None, f"The item changed (now version {exc.item.version}) while you verified it: "
                                     f"look at it again.")
                status = 409
            except (services.WorkflowError, ValidationError) as exc:
                form.add_error(None, _error_text(exc))
                status = 409
            else:
                messages.success(request, f"Saved: {form.cleaned_data['decision']} for {item}. Press n for the next item.")
                return redirect("annotation:verify", pk=item.pk)
        else:
            status = 400
    else:
        form = VerificationForm(initial={"item_version": item.version})
    context = _stage_context(request, item, Stage.VERIFICATION)
    mine = item.verification_decisions.filter(annotator=request.user).exclude(
        assignment__status="superseded").first()
    context.update({"form": form, "criteria": [(c, label, CRITERIA_KEYS[c]) for c, label in Criterion.choices],
                    "my_decision": mine})
    return render(request, "annotation/verify.html", context, status=status)


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
            try:
                saved = services.item_edit(item_id=item.pk, base_version=base_version, changes=form.changes(),
                                           user=request.user, stage=Stage.REWRITE, finish=finish,
                                           note=form.cleaned_data["note"].strip() or "rewritten")
            except services.StaleVersion as exc:
                # Never overwrite: keep the user's text as a draft and show what the other person changed.
                services.draft_save(item_id=item.pk, user=request.user, stage=Stage.REWRITE,
                                    base_version=base_version, data={**form.changes(), "base_version": base_version})
                conflict = _conflict(exc.item, base_version)
                status = 409
                item = exc.item
                # The next save, made after seeing the other change, starts from the stored version.
                form = RewriteForm({**request.POST.dict(), "base_version": item.version})
                form.is_valid()
            except (ValidationError, services.WorkflowError) as exc:
                form.add_error(None, _error_text(exc))
                status = 409 if isinstance(exc, services.WorkflowError) else 400
            else:
                if finish:
                    messages.success(request, f"{item}: rewrite done.")
                    return redirect("annotation:queue")
                messages.success(request, f"Saved version {saved.version}.")
                return redirect("annotation:rewrite", pk=item.pk)
        else:
            status = 400
    else:
        form = RewriteForm(initial=_rewrite_initial(item, draft.data if draft else None),
                           option_count=len((draft.data if draft else {}).get("options") or item.options))
    previous = selectors.revision_snapshot(item=item, number=item.version - 1)
    context = _stage_context(request, item, Stage.REWRITE)
    context.update({
        "form": form, "conflict": conflict, "draft": draft if request.method == "GET" else None,
        "previous_diff": content_diff(previous, item.content(), ["context", "question", "options", "answer_index"])
        if previous else [],
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
    answer_index = form.cleaned_data.get("answer_index")
    data = {"context": request.POST.get("context", ""), "question": request.POST.get("question", ""),
            "options": [request.POST.get(f"option_{i}", "") for i in range(form.option_count)],
            "answer_index": item.answer_index if answer_index is None else answer_index}
    base_version = form.cleaned_data.get("base_version") or item.version
    draft = services.draft_save(item_id=item.pk, user=request.user, stage=Stage.REWRITE, base_version=base_version,
                                data={**data, "base_version": base_version})
    return render(request, "annotation/rewrite.html#draft_status", {
        "draft": draft, "item": item, "live_diff": content_diff(item.content(), data, list(data)),
        "checks": option_checks([o.strip() for o in data["options"]], data["answer_index"]),
    })


# ---- clue graph


def _graph_meta(graph: EditableGraph) -> str:
    data = graph.to_data()
    return json.dumps({k: data[k] for k in GRAPH_META_KEYS})


def _graph_context(item, graph: EditableGraph, *, base_version: int) -> dict:
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
            try:
                saved = services.clue_graph_save(item_id=item.pk, base_version=base_version, graph=graph,
                                                 user=request.user, note=form.cleaned_data["note"].strip(),
                                                 finish=finish)
            except services.StaleVersion as exc:
                _save_graph_draft(request, item, graph, base_version)
                conflict = _conflict(exc.item, base_version)
                item, status = exc.item, 409
                base_version = item.version  # saving again, after seeing the diff, starts from the stored version
            except (ValidationError, services.WorkflowError) as exc:
                error, status = _error_text(exc), 409 if isinstance(exc, services.WorkflowError) else 400
            else:
                if finish:
                    messages.success(request, f"{item}: clue graph done, sent to review.")
                    return redirect("annotation:queue")
                messages.success(request, f"Saved version {saved.version}.")
                return redirect("annotation:clue_graph", pk=item.pk)
    elif draft is not None:
        graph, base_version = EditableGraph.from_data(draft.data), draft.base_version
    else:
        graph, base_version = editable_graph(item.evidence, item.reasoning), item.version
    context = _stage_context(request, item, Stage.CLUE_GRAPH)
    context.update(_graph_context(item, graph, base_version=base_version))
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
    context = {**_stage_context(request, item, Stage.CLUE_GRAPH),
               **_graph_context(item, graph, base_version=base_version), "error": error,
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


# ---- review, adjudication, history


@annotator_required
def review_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    status = 200
    if request.method == "POST":
        form = ReviewForm(request.POST)
        if form.is_valid():
            try:
                services.review_submit(item_id=item.pk, user=request.user, action=form.cleaned_data["action"],
                                       send_back_to=form.cleaned_data["send_back_to"],
                                       comment=form.cleaned_data["comment"],
                                       item_version=form.cleaned_data["item_version"])
            except services.StaleVersion as exc:
                form.add_error(None, f"The item changed (now version {exc.item.version}) while you reviewed it.")
                status = 409
            except (ValidationError, services.WorkflowError) as exc:
                form.add_error(None, _error_text(exc))
                status = 409
            else:
                messages.success(request, f"{item}: review saved.")
                return redirect("annotation:queue")
        else:
            status = 400
    else:
        form = ReviewForm(initial={"item_version": item.version})
    graph = editable_graph(item.evidence, item.reasoning)
    context = _stage_context(request, item, Stage.REVIEW)
    context.update(_graph_context(item, graph, base_version=item.version))
    verified = item.revisions.filter(stage=Stage.VERIFICATION).order_by("-number").first()
    context.update({"form": form, "since_verification": content_diff(verified.snapshot, item.content())
                    if verified else [], "history_url": reverse("annotation:history", args=[item.pk])})
    return render(request, "annotation/review.html", context, status=status)


@annotator_required
def adjudication_list_view(request):
    return render(request, "annotation/adjudication_list.html", {"adjudications": selectors.open_adjudications()})


@annotator_required
def adjudication_view(request, pk: int):
    adjudication = get_object_or_404(Adjudication.objects.select_related("item"), pk=pk)
    status = 200
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        if form.is_valid():
            try:
                services.adjudication_resolve(adjudication_id=pk, user=request.user,
                                              decision=form.cleaned_data["decision"],
                                              comment=form.cleaned_data["comment"])
            except (ValidationError, services.WorkflowError) as exc:
                form.add_error(None, _error_text(exc))
                status = 409
            else:
                messages.success(request, f"{adjudication.item}: resolved.")
                return redirect("annotation:adjudication_list")
        else:
            status = 400
    else:
        form = AdjudicationForm()
    decisions = adjudication.item.verification_decisions.exclude(assignment__status="superseded").select_related(
        "annotator")
    return render(request, "annotation/adjudication.html", {
        "adjudication": adjudication, "item": adjudication.item, "options": _options(adjudication.item),
        "decisions": decisions, "form": form, "open": adjudication.status == AdjudicationStatus.OPEN,
        "criteria_labels": dict(Criterion.choices)}, status=status)


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
            "conflict": _conflict(exc.item, form.cleaned_data["base_version"])}, status=409)
    except ItemRevision.DoesNotExist:
        raise Http404("no such revision")
    messages.success(request, f"Reverted to revision {form.cleaned_data['revision']} (as a new revision).")
    return redirect("annotation:history", pk=item.pk)


# ---- researchers


@researcher_required
def progress_view(request):
    if request.method == "POST":
        form = EnterWorkflowForm(request.POST)
        if form.is_valid():
            moved = services.items_enter_workflow(user=request.user, split=form.cleaned_data["split"] or None,
                                                  source=form.cleaned_data["source"] or None)
            messages.success(request, f"{moved} imported item(s) queued for verification.")
        return redirect("annotation:progress")
    return render(request, "annotation/progress.html", {"board": selectors.progress_board(),
                                                        "form": EnterWorkflowForm(), "stages": Stage.choices})


@researcher_required
def agreement_view(request):
    return render(request, "annotation/agreement.html", {"report": selectors.verification_agreement()})


def agreement_rows(report: dict) -> list[dict]:
    rows = []
    for q in report["questions"]:
        rows.append({"question": q["question"], "pair": "all", "items": q["items"],
                     "percent_agreement": q["percent_agreement"], "cohen_kappa": "",
                     "fleiss_kappa": q["fleiss_kappa"]})
        for pair in q["pairs"]:
            rows.append({"question": q["question"], "pair": " & ".join(pair["raters"]), "items": pair["items"],
                         "percent_agreement": pair["percent_agreement"], "cohen_kappa": pair["cohen_kappa"],
                         "fleiss_kappa": ""})
    return rows


@researcher_required
def agreement_export_view(request, fmt: str):
    report = selectors.verification_agreement()
    if fmt == "json":
        response = JsonResponse(report, json_dumps_params={"indent": 2})
    elif fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=["question", "pair", "items", "percent_agreement", "cohen_kappa",
                                                 "fleiss_kappa"])
        writer.writeheader()
        writer.writerows(agreement_rows(report))
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    else:
        raise Http404("csv or json")
    response["Content-Disposition"] = f'attachment; filename="verification-agreement.{fmt}"'
    return response
