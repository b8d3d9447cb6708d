"""Researcher tables: the leaderboard (paper Table 4), two runs compared item by item, and every table as a file
(CSV, JSON, LaTeX, a run's rows as JSONL)."""
from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

from evaluation.exports import tables as table_exports
from evaluation.figures.drawing import FORMATS, inline_svg
from evaluation.figures.drawing import render as render_file
from evaluation.figures.matrix import draw_matrix
from evaluation.forms.runs import LeaderboardForm, RunCompareForm
from evaluation.models import Result, Run
from evaluation.selectors import leaderboard as boards
from evaluation.selectors import runs as selectors
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.pairwise import correction_shown, pairwise_table
from evaluation.statistics.pairwise import Pairwise
from evaluation.views.runs import accuracy_figure, cached_render
from foundation.downloads import attach
from foundation.error_mapping import REFUSED, add_form_errors, error_page
from foundation.roles import researcher_required

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json", "tex": "application/x-tex",
                 "jsonl": "application/x-ndjson; charset=utf-8"}


def _check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    if fmt not in allowed:
        raise Http404(f"No {fmt!r} export here; formats: {', '.join(allowed)}.")


def _download(body: str, *, name: str, fmt: str) -> HttpResponse:
    return attach(HttpResponse(body, content_type=CONTENT_TYPES[fmt]), name, fmt)


@researcher_required
def comparison_redirect_view(request):
    """The old address of the comparison: the leaderboard, with the same query."""
    query = request.GET.urlencode()
    return redirect(reverse("evaluation:leaderboard") + (f"?{query}" if query else ""))


@researcher_required
def leaderboard_view(request):
    form = LeaderboardForm(request.GET or None)
    table = None
    if form.is_bound and form.is_valid() and (form.cleaned_data["split"] or form.cleaned_data["runs"]):
        try:
            table = boards.leaderboard(**form.selection())
        except REFUSED as exc:
            add_form_errors(form, exc)
    query = request.GET.urlencode()
    table_html = pairwise_html = ""
    if table is not None:
        _link_cells(table, request)
        table_html = cached_render("evaluation/leaderboard.html#table", request, data=[table.as_json(), [(e.pk, e.name, e.kind, e.model) for e in table.endpoints]],
                                   context={"table": table, "width": 1 + 3 * len(table.endpoints)})
        correction = form.cleaned_data.get("pairwise")
        if correction and table.cells:
            result = pairwise_table(table, correction=correction)
            pairwise_html = cached_render("evaluation/leaderboard.html#pairwise", request, data=result.as_json(),
                                          context={"pairwise": result, "query": query,
                                                   "rows": [(t, _p_text(t.p_value), _p_text(t.p_adjusted))
                                                            for t in result.tests],
                                                   "matrix": _matrix_svg(result, table)})
    return render(request, "evaluation/leaderboard.html", {
        "form": form, "table": table, "splits": boards.splits_with_runs() if table is None else [],
        "query": query, "table_html": table_html, "pairwise_html": pairwise_html,
        "figure": _figure(table) if table is not None and table.cells else "",
    })


#: The matrix figure is drawn up to this many rows (humans and cells); beyond, the table and the files remain.
MATRIX_MAX_ROWS = 60


def _draw_matrix(result: Pairwise, table: boards.Leaderboard):
    difference, p = result.matrix()
    title = gettext("Every pair: accuracy row - column, %(correction)s") % {"correction": correction_shown(result)}
    note = gettext("Items: %(scope)s. * = corrected p < %(alpha)s.") % {"scope": table.scope_shown, "alpha": result.alpha}
    return draw_matrix(result.labels, difference, p, title=title, alpha=result.alpha, note=note)


def _p_text(p: float | None) -> str:
    return "—" if p is None else f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _matrix_svg(result: Pairwise, table: boards.Leaderboard) -> str:
    if len(result.labels) < 2 or len(result.labels) > MATRIX_MAX_ROWS:
        return ""
    return mark_safe(inline_svg(_draw_matrix(result, table)))  # every text in it is escaped by the XML serializer


@researcher_required
def leaderboard_pairwise_export_view(request, fmt: str):
    """Every pair of the leaderboard's cells as a file: the tests (csv, json, tex) or the matrix (svg, png, pdf);
    ``pairwise`` names the correction (Holm when not given)."""
    _check_format(fmt, ("csv", "json", "tex", *FORMATS))
    form, table, refusal = _leaderboard_for_file(request)
    if refusal is not None:
        return refusal
    result = pairwise_table(table, correction=form.cleaned_data["pairwise"] or "holm")
    name = f"pairwise-{table.split or 'runs'}-{result.correction}"
    if fmt in FORMATS:
        return attach(HttpResponse(render_file(_draw_matrix(result, table), fmt), content_type=FORMATS[fmt]), name, fmt)
    body = {"csv": table_exports.pairwise_csv, "json": lambda r: json.dumps(r.as_json() | {"scope": table.scope}, indent=2),
            "tex": lambda r: table_exports.pairwise_latex(r, scope=table.scope)}[fmt](result)
    return _download(body, name=name, fmt=fmt)



def _fmt(value: float | None, spec: str, default: str = "—") -> str:
    return default if value is None else format(value, spec)


def _link_cells(table: boards.Leaderboard, request) -> None:
    """Each cell's links (its run, "test against this cell", the items it differs on from the reference) and
    numbers as text: one reversed prefix and plain formatting instead of three ``{% url %}`` and six
    ``floatformat`` per cell (a table of 169 cells renders in a fraction of the time)."""
    run_prefix = reverse("evaluation:run_detail", args=[0])[:-2]
    compare = reverse("evaluation:run_compare")
    params = request.GET.copy()
    for cell in table.cells:
        m = cell.metrics
        cell.text = {"acc": _fmt(cell.accuracy_pct, ".1f"), "keyinfo": _fmt(cell.keyinfo_pct, ".1f"),
                     "first": _fmt(cell.first_option_pct, ".1f"),
                     "ci": "" if m.ci_low is None else f"{m.ci_low:.3f}–{m.ci_high:.3f}",
                     "p": _fmt(cell.p_value, ".4f"), "p_holm": _fmt(cell.p_holm, ".4f"),
                     "circular": "" if cell.circular is None else
                     f"circular {_fmt(cell.circular_accuracy and 100 * cell.circular_accuracy, '.1f')} "
                     f"({cell.circular[1]} items)"}
        cell.href = f"{run_prefix}{cell.run.pk}/"
        params["reference"] = cell.key
        cell.ref_href = "?" + params.urlencode()
        if table.reference is not None:
            cell.compare_href = f"{compare}?a={table.reference.run.pk}&b={cell.run.pk}"


#: A bar per cell reads well up to this many cells; beyond, the table is the figure.
FIGURE_MAX_CELLS = 40


def _figure(table: boards.Leaderboard) -> str:
    if len(table.cells) > FIGURE_MAX_CELLS:
        return ""
    return accuracy_figure(gettext("Accuracy per cell (95% CI)"),
                            [(f"{c.method} · {c.endpoint.name}", c.metrics) for c in table.cells])



def _leaderboard_for_file(request):
    """(form, table, None) for a file of the leaderboard the query asks for; (form, None, response) when the
    query is invalid (400, its errors as JSON) or the leaderboard is refused (the error page)."""
    form = LeaderboardForm(request.GET or None)
    if not form.is_valid():
        return form, None, HttpResponse(json.dumps(form.errors), status=400, content_type="application/json")
    try:
        return form, boards.leaderboard(**form.selection()), None
    except REFUSED as exc:
        return form, None, error_page(request, exc)

@researcher_required
def leaderboard_export_view(request, fmt: str):
    _check_format(fmt, ("csv", "json", "tex"))
    _, table, refusal = _leaderboard_for_file(request)
    if refusal is not None:
        return refusal
    body = {"csv": table_exports.leaderboard_csv, "tex": table_exports.leaderboard_latex,
            "json": lambda t: json.dumps(t.as_json(), indent=2)}[fmt](table)
    return _download(body, name=f"leaderboard-{table.split or 'runs'}", fmt=fmt)


@researcher_required
def run_compare_view(request):
    form = RunCompareForm(request.GET or None)
    comparison = None
    if form.is_bound and form.is_valid():
        runs = Run.objects.select_related("endpoint").defer("item_ids", "requested_ids")
        a = get_object_or_404(runs, pk=form.cleaned_data["a"])
        b = get_object_or_404(runs, pk=form.cleaned_data["b"])
        try:
            comparison = run_comparison(a=a, b=b, exclude=form.exclusion())
        except REFUSED as exc:
            add_form_errors(form, exc)
    fmt = request.GET.get("format", "")
    if comparison is not None and fmt in ("csv", "json"):
        data = comparison.as_json()
        if fmt == "json":
            return _download(json.dumps(data, indent=2), name=f"compare-{data['a']}-{data['b']}", fmt="json")
        columns = list(data["differing"][0]) if data["differing"] else ["item"]
        return _download(table_exports.csv_text(data["differing"], columns), name=f"compare-{data['a']}-{data['b']}",
                         fmt="csv")
    context = {"form": form, "comparison": comparison, "query": request.GET.urlencode()}
    if comparison is not None:
        prefix = reverse("evaluation:result_detail", args=[0, 0])[:-len("0/results/0/")]
        context.update(page=Paginator(comparison.differing, 100).get_page(request.GET.get("page")),
                       a_prefix=f"{prefix}{comparison.a.pk}/results/", b_prefix=f"{prefix}{comparison.b.pk}/results/",
                       page_query=_without_page(request.GET))
    return render(request, "evaluation/run_compare.html", context)


def _without_page(query) -> str:
    query = query.copy()
    query.pop("page", None)
    query.pop("format", None)
    return query.urlencode()


RUN_LIST_COLUMNS = ["run", "method", "model", "status", "n", "accuracy", "accuracy_ci95", "first_option_baseline",
                    "keyinfo", "parse_failures", "errors", "tokens_in", "tokens_out", "cost", "wall_s",
                    "option_order", "seed", "prompt_version", "stale_rows", "circular_accuracy", "circular_n",
                    "n_fresh", "accuracy_fresh", "accuracy_fresh_ci95"]


@researcher_required
def run_list_export_view(request, fmt: str):
    _check_format(fmt, ("csv", "json"))
    rows = [run.summary.as_json() | {"split": run.split, "endpoint": run.endpoint.name}
            for run in selectors.run_list(limit=None)]
    if fmt == "json":
        return _download(json.dumps(rows, indent=2), name="runs", fmt="json")
    flat = [r | {key: "" if r[key] is None else "{:.6f}-{:.6f}".format(*tuple(r[key]))
                 for key in ("accuracy_ci95", "accuracy_fresh_ci95")} for r in rows]
    return _download(table_exports.csv_text(flat, ["endpoint", "split", *RUN_LIST_COLUMNS]), name="runs", fmt="csv")


@researcher_required
def run_types_export_view(request, pk: int, fmt: str):
    """A run's metrics per question type."""
    _check_format(fmt, ("csv", "json"))
    run = get_object_or_404(Run.objects.select_related("endpoint"), pk=pk)
    _, types = selectors.run_summary_and_question_types(run=run)
    rows = [{"question_type": name, **m.as_dict()} for name, m in types.items()]
    if fmt == "json":
        return _download(json.dumps(rows, indent=2), name=f"run-{run.pk}-question-types", fmt="json")
    columns = ["question_type", *(rows[0].keys() - {"question_type"} if rows else [])]
    columns = ["question_type"] + sorted(c for c in columns if c != "question_type")
    return _download(table_exports.csv_text(rows, columns), name=f"run-{run.pk}-question-types", fmt="csv")


@researcher_required
def run_results_jsonl_view(request, pk: int):
    """Every row of a run as JSON lines, streamed."""
    run = get_object_or_404(Run.objects.only("pk"), pk=pk)
    rows = (Result.objects.filter(run=run).order_by("item_id", "sample_index")
            .values(*table_exports.RESULT_JSONL_FIELDS, "item__external_id", "item__content_version").iterator(chunk_size=500))
    response = StreamingHttpResponse(table_exports.results_jsonl(rows, run_id=run.pk),
                                     content_type=CONTENT_TYPES["jsonl"])
    return attach(response, f"run-{run.pk}-results", "jsonl")


@researcher_required
def run_superseded_jsonl_view(request, pk: int):
    """Every row refreshes took out of a run (kept whole, as superseded rows) as JSON lines, streamed."""
    run = get_object_or_404(Run.objects.only("pk"), pk=pk)
    rows = (selectors.superseded_list(run=run).values(*table_exports.SUPERSEDED_JSONL_FIELDS)
            .iterator(chunk_size=500))
    response = StreamingHttpResponse(table_exports.superseded_jsonl(rows, run_id=run.pk),
                                     content_type=CONTENT_TYPES["jsonl"])
    return attach(response, f"run-{run.pk}-superseded", "jsonl")
