"""Belief-label review: the queues (annotators), a label under review (one key answers it and opens the next),
the trust figures and review policy of a queue with their export (researchers), and the clue-graph draft decision.
"""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from annotation.forms_belief import BeliefPolicyForm, BeliefReviewForm, DraftDecisionForm
from annotation.models import BeliefLabel, BeliefLeaseStatus, BeliefQueue, Criterion, LabelTask
from annotation.screening import SCREENING_CRITERIA
from annotation.selectors.belief import (
    belief_lease_for,
    belief_queues,
    lease_closed,
    reviewer_choices,
    shown_label,
    triage_basis,
)
from annotation.selectors.belief_precision import precisions
from annotation.selectors.belief_trust import EXPORT_COLUMNS, belief_trust
from annotation.services.belief import belief_queue_policy_set
from annotation.services.belief_review import (
    PrecisionReached,
    belief_draft_resolve,
    belief_lease_next,
    belief_lease_release,
    belief_review_submit,
)
from annotation.services.belief_sightings import belief_sightings_record
from annotation.trust_figure import coverage_svg, reliability_svg
from annotation.views.common import item_options
from foundation import csv_safety
from foundation.downloads import attach
from foundation.error_mapping import REFUSED, add_form_errors, error_page, error_text
from foundation.errors import Forbidden, Invalid
from foundation.roles import annotator_required, researcher_required

#: Payload keys of the judge's side not listed beside its label (the subject is shown in its own place).
UNLISTED_PAYLOAD = ("anchors",)
#: What a reviewer reads for the judge's payload fields (an unknown field is shown by its name, spaced).
PAYLOAD_NAMES = {
    "matched_option": gettext_lazy("Closest option"),
    "similarities": gettext_lazy("Similarity to each option"),
    "margin": gettext_lazy("Margin over the next closest option"),
    "votes": gettext_lazy("Votes of the samples"),
    "samples": gettext_lazy("Samples"),
    "stated_confidence": gettext_lazy("Confidence the judge stated"),
    "verdict_without_belief": gettext_lazy("Verdict before its belief was read"),
    "anchored_share": gettext_lazy("Key information found in the context"),
}
ASPECT_TEXT = {"verdict": gettext_lazy("Is the free-text answer the same as the gold option?"),
               "keep": gettext_lazy("Keep or delete the item?"), "graph": gettext_lazy("Is the drafted clue graph right?")}


@annotator_required
def belief_queue_list_view(request):
    queues = belief_queues(user=request.user)
    figures = precisions(queues=queues)
    for queue in queues:
        queue.precision = figures[queue.pk]
    return render(request, "annotation/belief_queues.html", {"queues": queues})


@annotator_required
@require_POST
def belief_next_view(request, name: str):
    queue = get_object_or_404(BeliefQueue, name=name)
    try:
        lease = belief_lease_next(queue_id=queue.pk, user=request.user)
    except PrecisionReached:
        messages.info(request, _("%(queue)s has reached the precision its researchers asked for: no more labels to "
                                 "review here for now. Thank you!") % {"queue": queue.name})
        return redirect("annotation:belief_queues")
    if lease is None:
        messages.info(request, _("No judge labels left for you in %(queue)s.") % {"queue": queue.name})
        return redirect("annotation:belief_queues")
    return redirect("annotation:belief_review", pk=lease.pk)


def _aspect_text(label) -> str:
    if label.task == LabelTask.SCREENING and label.aspect in SCREENING_CRITERIA:
        return _("Does criterion %(criterion)s hold?") % {"criterion": Criterion(SCREENING_CRITERIA[label.aspect]).label}
    return ASPECT_TEXT.get(label.aspect, label.aspect)


def _number(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _payload_value(key: str, value, item) -> str | None:
    """A payload value as a reviewer reads it: an option by its number and text, numbers rounded, lists joined;
    None when there is nothing to say (no closest option, an empty list)."""
    if value is None or value == [] or value == {} or value == "":
        return None
    if key == "matched_option" and isinstance(value, int) and 0 <= value < len(item.options):
        return f"{value + 1}. {item.options[value]}"
    if key == "similarities" and isinstance(value, list):
        return " · ".join(f"{i + 1}: {_number(v)}" for i, v in enumerate(value))
    if key == "anchored_share" and isinstance(value, (int, float)):
        return f"{value:.0%}"
    if isinstance(value, list):
        return ", ".join(_number(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_number(v)}" for k, v in value.items())
    return _number(value)


def payload_rows(payload: dict, item) -> list[tuple[str, str]]:
    """The judge's payload as (name, value) rows in words: no codes ("matched_option"), no "None"."""
    rows = []
    for key, value in payload.items():
        shown = None if key in UNLISTED_PAYLOAD else _payload_value(key, value, item)
        if shown is not None:
            rows.append((str(PAYLOAD_NAMES.get(key, key.replace("_", " ").capitalize())), shown))
    return rows


def _review_context(request, lease, form=None) -> dict:
    """The page's context holds the label only as `shown_label` gives it to this reviewer (never the row)."""
    label = shown_label(lease.label, user=request.user)
    review = getattr(lease, "review", None) if lease.status == BeliefLeaseStatus.SUBMITTED else None
    # A lease its holder can no longer answer (reviewed on a workflow screen, the label's reviews given by others,
    # its item's verification verdicts public) offers no answer form: the reason and the next label instead.
    closed = None if review else lease_closed(lease, user=request.user, now=timezone.now())
    if review or not closed:  # the page shows the judge (unless hidden) only then
        belief_sightings_record(user=request.user, shown=[label], via="belief_review")
    judge = label.judge
    item = lease.label.item
    return {
        "lease": {"pk": lease.pk}, "label": label, "judge": judge, "queue": lease.label.queue,
        "item": item, "options": item_options(item), "review": review,
        "choices": label.choices, "hide_judge": judge is None, "closed": closed[1] if closed else "",
        "form": form or BeliefReviewForm(choices=label.choices),
        "aspect_text": _aspect_text(label),
        "payload_rows": payload_rows(judge.payload, item) if judge else [],
    }


def _answer_summary(request, lease) -> str:
    """What the reviewer said of a label and, now that they answered, what the judge said: the message shown on the
    next label's page."""
    label = shown_label(lease.label, user=request.user)
    review = lease.review
    said = _("%(item)s: you said “%(label)s”.") % {"item": lease.label.item, "label": review.human_label}
    judge = label.judge
    if judge is None or not judge.label:
        return said
    verdict = _("you agreed") if review.agrees else _("you overrode it")
    if judge.belief is None:
        return said + " " + _("The judge said “%(label)s”: %(verdict)s.") % {"label": judge.label, "verdict": verdict}
    return said + " " + _("The judge said “%(label)s” with belief %(belief).2f: %(verdict)s.") % {
        "label": judge.label, "belief": judge.belief, "verdict": verdict}


@annotator_required
def belief_review_view(request, pk: int):
    """One leased label: the item, what the judge labelled and (unless blind) its label and belief."""
    lease = belief_lease_for(lease_id=pk)
    if lease is None:
        raise Http404("no such lease")
    if lease.reviewer_id != request.user.pk:
        raise Forbidden(_("this label was handed to someone else"))
    status = 200
    form = None
    if request.method == "POST":
        form = BeliefReviewForm(request.POST, choices=reviewer_choices(lease.label))
        if form.is_valid():
            try:
                belief_review_submit(lease_id=lease.pk, user=request.user,
                                     human_label=form.cleaned_data["human_label"],
                                     comment=form.cleaned_data["comment"])
            except REFUSED as exc:
                add_form_errors(form, exc)
                status = 409
            else:
                lease = belief_lease_for(lease_id=pk)
                if request.POST.get("next"):
                    # One action per label: the answer is saved and the next label opens, with what was said.
                    messages.success(request, _answer_summary(request, lease))
                    return belief_next_view(request, lease.label.queue.name)
                if not request.htmx:
                    return redirect("annotation:belief_review", pk=pk)
                return render(request, "annotation/belief_review.html#answer", _review_context(request, lease))
        else:
            status = 422 if request.htmx else 400
    context = _review_context(request, lease, form)
    if request.htmx and request.method == "POST":
        return render(request, "annotation/belief_review.html#answer", context, status=status)
    return render(request, "annotation/belief_review.html", context, status=status)


@annotator_required
@require_POST
def belief_release_view(request, pk: int):
    lease = belief_lease_for(lease_id=pk)
    if lease is None or lease.reviewer_id != request.user.pk:
        raise Http404("no such lease of yours")
    belief_lease_release(lease_id=pk, user=request.user)
    if request.POST.get("next"):
        return belief_next_view(request, lease.label.queue.name)
    return redirect("annotation:belief_queues")


@researcher_required
def belief_trust_index_view(request):
    """The trust page of the first queue (each trust page links to the others)."""
    queue = BeliefQueue.objects.order_by("name").first()
    if queue is None:
        messages.info(request, _("No judge has labelled anything yet."))
        return redirect("annotation:belief_queues")
    return redirect("annotation:belief_trust", name=queue.name)


@researcher_required
def belief_trust_view(request, name: str):
    """Trust figures of a queue (uniform sample and weighted), its diagram and curve, its policy form."""
    queue = get_object_or_404(BeliefQueue, name=name)
    status = 200
    if request.method == "POST":
        form = BeliefPolicyForm(request.POST, instance=BeliefQueue.objects.get(pk=queue.pk))
        if form.is_valid():
            try:
                belief_queue_policy_set(queue_id=queue.pk, **form.policy())
            except REFUSED as exc:
                add_form_errors(form, exc)
                status = 400
            else:
                messages.success(request, _("Review policy of %(queue)s saved.") % {"queue": queue.name})
                return redirect("annotation:belief_trust", name=queue.name)
        else:
            status = 400
    else:
        form = BeliefPolicyForm(instance=queue)
    figures = belief_trust(queue=queue)
    return render(request, "annotation/belief_trust.html", {
        "queue": queue, "figures": figures, "form": form, "rows": _figure_rows(figures),
        "triage": triage_basis(queue=queue),
        "reliability_svg": reliability_svg(figures["uniform"]["bins"], title=_("Reliability (uniform sample)")),
        "coverage_svg": coverage_svg(figures["uniform"]["curve"], threshold=queue.accept_threshold),
        "queues": BeliefQueue.objects.order_by("name"),
        "criteria": _criterion_rows(figures),
    }, status=status)


def _criterion_rows(figures: dict) -> list[dict]:
    """Per question of the queue (a screening queue's aspects): accuracy and kappa, uniform and weighted."""
    return [{"aspect": a["aspect"], "rows": [
        {"id": f"{key}-{a['aspect']}", "name": name, "uniform": a["uniform"][key], "weighted": a["weighted"][key]}
        for key, name in (("accuracy", _("Accuracy (agreement with people)")), ("kappa", _("Cohen's kappa")))]}
        for a in figures["by_aspect"]]


FIGURE_ROWS = (("accuracy", gettext_lazy("Accuracy (agreement with people)")), ("kappa", gettext_lazy("Cohen's kappa")),
               ("ece", gettext_lazy("Expected calibration error")), ("brier", gettext_lazy("Brier score")),
               ("above_threshold", gettext_lazy("Agreement above the threshold")),
               ("coverage_above_threshold", gettext_lazy("Share of labels above the threshold")))


def _figure_rows(figures: dict) -> list[dict]:
    """The table of the trust page: each figure for the uniform sample and the weighted estimate, each with its n
    (the share above the threshold is of every scored label) or the reason it is missing."""
    def cell(side: dict, key: str):
        value = side[key]
        if key in ("above_threshold", "coverage_above_threshold") and side["threshold"] is None:
            return {"value": None}  # the row's name says "no threshold set"
        if isinstance(value, dict):
            return value
        n = figures["n_scored"] if key == "coverage_above_threshold" else side["n"]
        return {"value": value, "n": n, "reason": side["reason"]}
    return [{"id": key, "name": name, "uniform": cell(figures["uniform"], key),
             "weighted": cell(figures["weighted"], key)} for key, name in FIGURE_ROWS]


def _plain(figures: dict) -> dict:
    return {k: v for k, v in figures.items() if k not in ("queue", "rows")}


@researcher_required
def belief_trust_export_view(request, name: str, fmt: str):
    """The trust figures (JSON) or the review rows they are computed from (CSV)."""
    queue = get_object_or_404(BeliefQueue, name=name)
    figures = belief_trust(queue=queue)
    if fmt == "json":
        policy = {f: getattr(queue, f) for f in ("name", "order", "random_share", "reviewers_per_label", "blind",
                                                 "accept_threshold", "lease_minutes", "target_half_width")}
        response = JsonResponse({"queue": policy, "figures": _plain(figures), "reviews": figures["rows"]},
                                json_dumps_params={"indent": 1})
    elif fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        writer = csv_safety.DictWriter(response, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        writer.writerows(figures["rows"])
    else:
        raise Http404("export as csv or json")
    return attach(response, f"trust-{queue.name}", fmt)


@annotator_required
@require_POST
def belief_draft_view(request, pk: int):
    """Accept, edit or discard the judge's clue-graph draft, back to the clue-graph screen."""
    label = get_object_or_404(BeliefLabel, pk=pk, task=LabelTask.CLUE_GRAPH)
    form = DraftDecisionForm(request.POST)
    if not form.is_valid():
        # Only a client other than the page sends these (no such action, a version no item has): answered at once.
        why = _("Choose accept, edit or discard.") if "action" in form.errors else "; ".join(form.named_errors())
        return error_page(request, Invalid(why))
    try:
        belief_draft_resolve(label_id=label.pk, user=request.user, action=form.cleaned_data["action"],
                             base_version=form.cleaned_data["base_version"])
    except REFUSED as exc:
        messages.error(request, error_text(exc))
    else:
        messages.success(request, {"accept": "The judge's draft is now the clue graph.",
                                   "edit": "The judge's draft is in the editor: edit it and save.",
                                   "discard": "The judge's draft was discarded."}[form.cleaned_data["action"]])
    return redirect("annotation:clue_graph", pk=label.item_id)

