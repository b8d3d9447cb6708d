"""Researcher pages for analysis: the paper's figures (inline SVG; PNG, PDF, SVG and JSON downloads), the
data-quality report of a split (page and JSON), one scale for people and models (item-response fit: page, CSV,
JSON, figure files), and the request count of a launch before it starts."""
from __future__ import annotations

from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from evaluation.errors import EmptyFigure
from evaluation.exports import tables as table_exports
from evaluation.figures.data import FIGURES
from evaluation.figures.drawing import FORMATS, draw, inline_svg
from evaluation.figures.drawing import render as render_file
from evaluation.figures.scale import draw_scale
from evaluation.forms.analysis import FigureForm, OneScaleForm, SplitForm
from evaluation.forms.runs import RunLaunchForm
from evaluation.models import OptionOrder
from evaluation.selectors import analysis, quality
from evaluation.selectors.one_scale import OneScale, one_scale
from evaluation.services.sweeps import sweep_estimate
from foundation.downloads import attach
from foundation.error_mapping import REFUSED, error_text
from foundation.roles import researcher_required


def _figure_form(request) -> FigureForm:
    """Bound once a split is asked for; the option order is the original one unless another (or any) is.
    The runs to pick from are the split's finished multiple-choice runs."""
    if "split" not in request.GET:
        return FigureForm(None, splits=quality.quality_splits())
    data = request.GET.copy()
    if "option_order" not in data:
        data["option_order"] = OptionOrder.ORIGINAL
    choices = analysis.figure_run_choices(split=data.get("split", ""), option_order=data.get("option_order", ""))
    return FigureForm(data, splits=quality.quality_splits(), run_choices=choices)


def _choice(form: FigureForm) -> dict:
    data = form.cleaned_data
    return {"split": data["split"], "option_order": data["option_order"], "exclude": form.exclusion(),
            "run_ids": data.get("runs") or ()}


@researcher_required
@require_GET
def figures_view(request):
    """Every figure of one split; each is fetched by htmx (they draw in parallel), with a plain link beside."""
    form = _figure_form(request)
    chosen = form.is_valid()
    return render(request, "evaluation/figures.html", {
        "form": form, "chosen": chosen, "figures": [(name, gettext(title)) for name, title in FIGURES.items()],
        "query": request.GET.urlencode() if chosen else "", "formats": ("png", "pdf", "svg", "json"),
    })


def _figure_or_404(request, name: str):
    if name not in FIGURES:
        raise Http404("No such figure.")
    form = _figure_form(request)
    if not form.is_valid():
        return None, form
    return analysis.figure_data(name, **_choice(form)), form


@researcher_required
@require_GET
def figure_view(request, name: str):
    """One figure as a card body: the inline SVG and what it was drawn over (the htmx part of the page)."""
    try:
        data, form = _figure_or_404(request, name)
    except EmptyFigure as empty:
        return render(request, "evaluation/figures.html#figure", {"name": name, "empty": empty.message})
    if data is None:
        return render(request, "evaluation/figures.html#figure", {"name": name, "form": form}, status=400)
    svg = mark_safe(inline_svg(draw(data)))  # every text in it is escaped by the XML serializer
    return render(request, "evaluation/figures.html#figure", {"name": name, "svg": svg, "data": data})


@researcher_required
@require_GET
def figure_file_view(request, name: str, fmt: str):
    """A figure as a file to keep: png, pdf, svg, or its numbers as json."""
    if fmt not in (*FORMATS, "json"):
        raise Http404("No such format.")
    try:
        data, form = _figure_or_404(request, name)
    except EmptyFigure as empty:
        return JsonResponse({"code": empty.code, "detail": empty.message}, status=empty.http_status)
    if data is None:
        return JsonResponse({"code": "invalid", "detail": "Choose a split.", "errors": form.errors}, status=400)
    split = form.cleaned_data["split"]
    if fmt == "json":
        response = JsonResponse({"figure": name, "split": split, **data.as_dict()})
    else:
        response = HttpResponse(render_file(draw(data), fmt), content_type=FORMATS[fmt])
    return attach(response, f"{name}-{split}", fmt)


@researcher_required
@require_GET
def quality_view(request):
    """The data-quality report of a split; ?format=json gives the same as JSON."""
    form = SplitForm(request.GET if "split" in request.GET else None, splits=quality.quality_splits())
    report = quality.quality_report(split=form.cleaned_data["split"]) if form.is_valid() else None
    if request.GET.get("format") == "json":
        if report is None:
            return JsonResponse({"code": "invalid", "detail": "Choose a split.", "errors": form.errors}, status=400)
        return JsonResponse(report)
    context = {"form": form, "report": report}
    if report is not None:
        skew = report["answer_positions"]
        context.update(positions=[(c, 100 * s) for c, s in zip(skew["counts"], skew["shares"])],
                       expected_pct=100 * (skew["expected_share"] or 0), first_pct=100 * (skew["first_share"] or 0))
    return render(request, "evaluation/quality.html", context)


@researcher_required
@require_GET
def launch_estimate_view(request):
    """The launch form's request count (and cost where endpoints have prices), as an htmx fragment."""
    form = RunLaunchForm(request.GET)
    form.is_valid()
    data = form.cleaned_data
    context = {"estimate": None, "missing": [f for f in ("endpoints", "methods") if not data.get(f)]}
    if not context["missing"]:
        try:
            context["estimate"] = sweep_estimate(endpoints=list(data["endpoints"]), methods=data["methods"],
                                                 **form.selection())
        except REFUSED as exc:
            context["error"] = error_text(exc)
    return render(request, "evaluation/_launch_estimate.html", context)


def _one_scale_form(request) -> OneScaleForm:
    return OneScaleForm(request.GET if "split" in request.GET else None, splits=quality.quality_splits())


def _scale_figure(result: OneScale):
    return draw_scale([p.ability for p in result.people], [(m.label, m.ability, m.low, m.high) for m in result.models],
                      [i.difficulty for i in result.items],
                      title=gettext("People and models on one scale (%(model)s), split %(split)s")
                      % {"model": result.model, "split": result.split},
                      note=gettext("%(people)s study attempts, %(models)s model runs, %(items)s items, %(answers)s "
                                   "answers; models with 95%% intervals.")
                      % {"people": len(result.people), "models": len(result.models), "items": len(result.items),
                         "answers": result.answers})


def _quartiles(values: list[float]) -> dict | None:
    if not values:
        return None
    import numpy as np

    q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    return {"n": len(values), "q1": float(q1), "median": float(median), "q3": float(q3)}


#: The page lists this many items by difficulty (the CSV has them all).
ITEMS_SHOWN = 200
PEOPLE_SHOWN = 100


@researcher_required
@require_GET
def one_scale_view(request):
    """People and models on one ability scale: the fit, the figure, respondents, items, and the items that are hard
    for one group and easy for the other."""
    form = _one_scale_form(request)
    context = {"form": form, "result": None}
    if form.is_valid():
        try:
            result = one_scale(split=form.cleaned_data["split"], model=form.cleaned_data["model"])
        except EmptyFigure as empty:
            context["empty"] = empty.message
        else:
            people = result.people
            context.update(result=result, query=request.GET.urlencode(), people=people[:PEOPLE_SHOWN],
                           svg=mark_safe(inline_svg(_scale_figure(result))),  # escaped by the XML serializer
                           summary=_quartiles([p.ability for p in people]),
                           items=sorted(result.items, key=lambda i: -i.difficulty)[:ITEMS_SHOWN],
                           items_shown=min(ITEMS_SHOWN, len(result.items)))
    return render(request, "evaluation/one_scale.html", context)


ONE_SCALE_FILES = {"respondents": ("csv",), "items": ("csv",), "scale": ("json",), "figure": tuple(FORMATS)}


@researcher_required
@require_GET
def one_scale_file_view(request, name: str, fmt: str):
    """The one-scale fit as files: respondents.csv, items.csv, scale.json, figure.png|pdf|svg."""
    if fmt not in ONE_SCALE_FILES.get(name, ()):
        raise Http404("No such file.")
    form = _one_scale_form(request)
    if not form.is_valid():
        return JsonResponse({"code": "invalid", "detail": "Choose a split.", "errors": form.errors}, status=400)
    try:
        result = one_scale(split=form.cleaned_data["split"], model=form.cleaned_data["model"])
    except EmptyFigure as empty:
        return JsonResponse({"code": empty.code, "detail": empty.message}, status=empty.http_status)
    if name == "figure":
        response = HttpResponse(render_file(_scale_figure(result), fmt), content_type=FORMATS[fmt])
    elif name == "scale":
        response = JsonResponse(result.as_json())
    else:
        body = (table_exports.respondents_csv if name == "respondents" else table_exports.items_csv)(result)
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    return attach(response, f"one-scale-{name}-{result.split}", fmt)
