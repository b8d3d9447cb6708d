"""Researcher pages: study setup, live monitor, results and exports."""
from __future__ import annotations

import json

from django.contrib import messages
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy
from django.views.decorators.http import require_POST

from foundation import csv_safety
from foundation.downloads import attach
from foundation.error_mapping import REFUSED, add_form_errors, error_text
from foundation.roles import researcher_required
from foundation.words import gettext as translated
from foundation.words import gettext_noop
from studies import services, setup_checks
from studies.forms import SETTING_FIELDS, ExtendForm, StudyForm
from studies.models import DEFAULT_CONSENT_TEXT, Attempt, AttemptStatus, Study
from studies.selectors.exports import EXPORT_FIELDS, csv_row, study_export, study_export_rows
from studies.selectors.item_states import CURRENT, DELETED, STALE
from studies.selectors.monitor import study_list, study_monitor
from studies.selectors.results import study_results


@researcher_required
def study_list_view(request):
    return render(request, "studies/study_list.html", {"studies": study_list()})


@researcher_required
def study_create_view(request):
    form = StudyForm(request.POST or None, initial={"pool_split": "test", "pool_sample": 250,
                                                    "consent_text": str(DEFAULT_CONSENT_TEXT)})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = services.study_create(slug=data["slug"], pool_items=data["pool_items"], user=request.user,
                                          exclude_untranslated=data["exclude_untranslated"],
                                          **{name: data[name] for name in SETTING_FIELDS})
        except REFUSED as error:
            add_form_errors(form, error)
        else:
            messages.success(request, _("Study %(slug)s created with %(n)s items.") % {"slug": study.slug, "n": study.pool.count()})
            return redirect("studies:study_monitor", slug=study.slug)
    return render(request, "studies/study_form.html", {"form": form, "study": None})



@researcher_required
def study_edit_view(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    form = StudyForm(request.POST or None, instance=study)
    form.fields["slug"].disabled = True
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.study_update(study_id=study.pk, pool_items=data["pool_items"],
                                  exclude_untranslated=data["exclude_untranslated"],
                                  **{name: data[name] for name in SETTING_FIELDS})
        except REFUSED as error:
            add_form_errors(form, error)
        else:
            messages.success(request, _("Study saved."))
            return redirect("studies:study_monitor", slug=study.slug)
    return render(request, "studies/study_form.html", {"form": form, "study": study,
                                                       "warnings": setup_checks.setup_warnings(study)})


@researcher_required
def study_monitor_view(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    context = {"study": study, "monitor": study_monitor(study), "extend_form": ExtendForm(),
               "AttemptStatus": AttemptStatus}
    if request.htmx:  # the live part only: the setup checks do not change while the page polls
        return render(request, "studies/study_monitor.html#live", context)
    coverage = setup_checks.translation_coverage(study)
    context.update(coverage=coverage, coverage_gaps=[c for c in coverage if not c.complete],
                   coverage_missing=any(c.missing for c in coverage), warnings=setup_checks.setup_warnings(study))
    return render(request, "studies/study_monitor.html", context)


@researcher_required
@require_POST
def study_exclude_untranslated_view(request, slug: str):
    """Leave the pool items without a translation into the study's languages out of the pool."""
    study = get_object_or_404(Study, slug=slug)
    try:
        left_out = services.study_exclude_untranslated(study_id=study.pk)
    except REFUSED as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, _("%(n)s untranslated item(s) left out of the pool.") % {"n": left_out})
    return redirect("studies:study_monitor", slug=slug)


@researcher_required
@require_POST
def study_reask_view(request, slug: str):
    """Give back the places that answers on an item's earlier content hold, so that the items edited mid-study are
    asked again at their current content (studies.services.reasking)."""
    study = get_object_or_404(Study, slug=slug)
    done = services.study_reask_changed_items(study_id=study.pk)
    if done.answers:
        messages.success(request, _("%(items)s item(s) will be asked again at their current content: %(answers)s "
                                    "earlier answer(s) gave their places back (they stay on record, counted apart).")
                         % {"items": done.items, "answers": done.answers})
    if done.taken_back:
        messages.success(request, _("%(n)s answer(s) current again (an edit undone) took their places back.")
                         % {"n": done.taken_back})
    if not done.answers and not done.taken_back:
        messages.info(request, _("No answer on an earlier content holds a place: nothing to ask again."))
    return redirect("studies:study_monitor", slug=slug)


@researcher_required
@require_POST
def attempt_extend_view(request, slug: str, attempt_id: int):
    attempt = get_object_or_404(Attempt, pk=attempt_id, study__slug=slug)
    form = ExtendForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(m for ms in form.errors.values() for m in ms))
        return redirect("studies:study_monitor", slug=slug)
    try:
        services.attempt_extend(attempt_id=attempt.pk, seconds=form.cleaned_data["minutes"] * 60)
    except REFUSED as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, _("Attempt %(n)s extended by %(minutes)s minutes.") % {"n": attempt.pk, "minutes": form.cleaned_data["minutes"]})
    return redirect("studies:study_monitor", slug=slug)


@researcher_required
@require_POST
def attempt_expire_view(request, slug: str, attempt_id: int):
    attempt = get_object_or_404(Attempt, pk=attempt_id, study__slug=slug)
    services.attempt_expire(attempt_id=attempt.pk)
    messages.success(request, _("Attempt %(n)s expired; its unanswered items are back in the pool.") % {"n": attempt.pk})
    return redirect("studies:study_monitor", slug=slug)


@researcher_required
def study_results_view(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    results = study_results(study)
    states = results.states
    return render(request, "studies/study_results.html", {
        "study": study, "results": results,
        "table3_note": translated(TABLE3_NOTE, n=results.n_timed_out), "items_note": translated(ITEMS_NOTE),
        "counted_note": translated(COUNTED_NOTE, current=states[CURRENT].counted, stale=states[STALE].counted,
                                   deleted=states[DELETED].counted),
        "leaderboard_note": translated(LEADERBOARD_NOTE), "states_note": translated(STATES_NOTE),
        "state_rows": [(state, label, states[state]) for state, label in STATE_LABELS]})


COUNTED_NOTE = gettext_noop(
    "Accuracy counts current answers only: the %(current)s answers and time-outs on items not deleted whose content "
    "is still the one the participant saw. Counted apart: %(stale)s on items whose content changed since (stale) and "
    "%(deleted)s on deleted items (see Answers by item state; the bonus pays for every correct answer).")
LEADERBOARD_NOTE = gettext_noop(
    "The leaderboard's Humans row counts the same current answers (deleted items left out) but pools them: correct / "
    "(answers + time-outs) over every attempt, dropouts too, of every study, on the items each model column has "
    "current results for. Over this study's answers alone, on a column with current results for all its items, that "
    "is the pooled figure above; Table 3 instead averages each participant's own accuracy over finished attempts.")
STATES_NOTE = gettext_noop(
    "Current: the item's content is still the one the participant saw. Stale: the content changed since (each item "
    "row names the fields, when and by whom). Deleted: the item was rejected since. Each answer is compared with the "
    "correct option of the version it was given on.")
STATE_LABELS = ((CURRENT, pgettext_lazy("item state", "current")), (STALE, gettext_lazy("stale")),
                (DELETED, pgettext_lazy("item state", "deleted")))


TABLE3_NOTE = gettext_noop(
    "Accuracy = correct / (answered + timed out): a question whose own time limit ran out before an answer counts as "
    "not correct (%(n)s such questions). A participant who answered no question ends as expired, not finished.")
ITEMS_NOTE = gettext_noop(
    "One row per item and content version (v): answers to different versions of an item are never pooled, and each "
    "is compared with the correct option of the version it was given on; ⏱ = questions whose time ran out, counted "
    "as not correct.")


class _Echo:
    def write(self, value):
        return value


@researcher_required
def study_export_view(request, slug: str, fmt: str):
    """Every lease, answer, highlight, timing and flag, including unfinished attempts and refused answers."""
    study = get_object_or_404(Study, slug=slug)
    if fmt not in ("csv", "json"):
        raise Http404("Export formats: csv, json.")
    if fmt == "json":
        response = HttpResponse(
            json.dumps(study_export(study), cls=DjangoJSONEncoder, ensure_ascii=False, indent=1),
            content_type="application/json")
    else:
        writer = csv_safety.DictWriter(_Echo(), fieldnames=EXPORT_FIELDS)

        def lines():
            yield writer.writeheader()
            for row in study_export_rows(study):
                yield writer.writerow(csv_row(row))

        response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    return attach(response, f"study-{study.slug}", fmt)
