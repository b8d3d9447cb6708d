"""Item browser pages for annotators and researchers, and the researchers' import page."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from annotation import selectors
from annotation.errors import CuratedConflicts, ImportRejected
from annotation.forms import ItemFilterForm
from annotation.forms_import import ItemImportForm
from annotation.item_facts import QUESTION_TYPES
from annotation.models import Item, ItemStatus
from annotation.services import item_import
from annotation.views.common import attempt, item_options
from foundation.error_mapping import error_page
from foundation.roles import annotator_required, researcher_required


@annotator_required
def item_list_view(request):
    form = ItemFilterForm(request.GET)
    form.is_valid()
    filters = form.cleaned_data if form.is_valid() else {}
    items = selectors.item_browser(
        split=filters.get("split") or None, source=filters.get("source") or None,
        status=filters.get("status") or None, question_type=filters.get("question_type") or None,
        search=filters.get("q") or None)
    page = Paginator(items, 50).get_page(filters.get("page") or 1)
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form, "page": page, "filters": filters, "query": query.urlencode(),
        "facets": selectors.item_facets(), "statuses": ItemStatus.choices, "question_types": QUESTION_TYPES,
    }
    template = "annotation/item_list.html#results" if request.htmx else "annotation/item_list.html"
    return render(request, template, context)


@annotator_required
def item_detail_view(request, pk: int):
    item = get_object_or_404(Item, pk=pk)
    context = {"item": item, "options": item_options(item), **selectors.item_detail(item=item)}
    return render(request, "annotation/item_detail.html", context)


@researcher_required
def item_import_view(request):
    report, errors, status = None, [], 200
    splits = selectors.item_splits()
    if request.method == "POST":
        form = ItemImportForm(request.POST, request.FILES, splits=splits)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            report, refusal = attempt(lambda: item_import(
                stream=upload.file, file_name=upload.name, source=form.cleaned_data["source"],
                split=form.cleaned_data["split"], user=request.user,
                dry_run=form.cleaned_data["dry_run"], skip_invalid=form.cleaned_data["skip_invalid"],
                curated=form.cleaned_data["curated"]))
            if isinstance(refusal, ImportRejected):
                errors, status = refusal.line_errors, refusal.http_status
                messages.error(request, _("%(n)s invalid line(s) in %(file)s: nothing was imported.")
                               % {"n": len(errors), "file": upload.name})
            elif isinstance(refusal, CuratedConflicts):
                errors, status = refusal.conflicts, refusal.http_status
                messages.error(request, _("%(n)s item(s) of %(file)s were edited in the app since their last import: "
                                          "nothing was imported. Choose what to do with them below.")
                               % {"n": len(errors), "file": upload.name})
            elif refusal is not None:
                return error_page(request, refusal)
            else:
                messages.success(request, _("%(file)s into split %(split)s: %(summary)s") % {
                    "file": upload.name, "split": form.cleaned_data["split"], "summary": report.summary()})
                if not report.dry_run and not report.errors:
                    kept = {"done": 1, "split": form.cleaned_data["split"], "source": form.cleaned_data["source"]}
                    return redirect(f"{request.path}?{urlencode(kept)}")  # the next upload keeps split and source
                errors = report.errors
        else:
            status = 400  # e.g. no file or an empty one (the form says which)
    else:
        form = ItemImportForm(initial={k: request.GET[k] for k in ("split", "source") if request.GET.get(k)},
                              splits=splits)
    return render(request, "annotation/item_import.html", {"form": form, "report": report, "errors": errors[:200],
                                                           "error_count": len(errors)}, status=status)
