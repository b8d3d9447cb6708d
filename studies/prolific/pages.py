"""The researcher's Prolific page of a study (/studies/<slug>/prolific/): the connection and its test, Prolific's
status and places beside the app's own counts, submissions to approve or reject, bonus batches to propose, approve
and send (through the worker), and the webhook deliveries about this study. Each action is a POST that redirects
back with what happened (no JavaScript needed); refusals are messages naming what was wrong."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from foundation.error_mapping import REFUSED, add_form_errors, error_text
from foundation.roles import researcher_required
from studies.models import Attempt, AttemptStatus, Study
from studies.prolific import selectors, services
from studies.prolific.errors import SubmissionReviewRefused
from studies.prolific.models import BonusBatch, ProlificWebhookDelivery, SubmissionStatus
from studies.prolific.services.connections import REJECTION_CATEGORIES
from studies.tasks import send_bonus_batch


class ConnectionForm(forms.Form):
    prolific_study_id = forms.CharField(label=gettext_lazy("Prolific study id"), max_length=64)
    token_env = forms.CharField(
        label=gettext_lazy("Variable holding the API token"), max_length=100, initial="PROLIFIC_API_TOKEN",
        help_text=gettext_lazy("The NAME of an environment variable of the server, starting with PROLIFIC_; "
                               "never the token itself."))


class RejectForm(forms.Form):
    message = forms.CharField(label=gettext_lazy("Reason for the participant"), min_length=100,
                              widget=forms.Textarea(attrs={"rows": 3}))
    category = forms.ChoiceField(label=gettext_lazy("Category"),
                                 choices=[(c, c.replace("_", " ").capitalize()) for c in sorted(REJECTION_CATEGORIES)])


def _page(request, study: Study, *, form: ConnectionForm | None = None, status: int = 200):
    connection = selectors.connection_for(study_id=study.pk)
    if form is None:
        initial = {"prolific_study_id": connection.prolific_study_id, "token_env": connection.token_env} \
            if connection else None
        form = ConnectionForm(initial=initial)
    submissions = list(selectors.submission_list(study_id=study.pk)) if connection else []
    attempts = Attempt.objects.filter(study=study)
    context = {
        "study": study, "connection": connection, "form": form, "reject_form": RejectForm(),
        "submissions": submissions, "submission_counts": selectors.submission_counts(study_id=study.pk),
        "awaiting_review": SubmissionStatus.AWAITING_REVIEW,
        "app_counts": {"joined": attempts.count(),
                       "finished": attempts.filter(status=AttemptStatus.FINISHED).count(),
                       "running": attempts.filter(status=AttemptStatus.STARTED).count(),
                       "screened_out": attempts.filter(status=AttemptStatus.SCREENED_OUT).count()},
        "reports": list(selectors.attempt_reports(study_id=study.pk)),
        "batches": list(selectors.bonus_batch_list(study_id=study.pk)),
        "deliveries": list(ProlificWebhookDelivery.objects.filter(attempt__study=study).order_by("-received_at")[:20]),
    }
    return render(request, "studies/prolific.html", context, status=status)


@researcher_required
def prolific_view(request, slug: str):
    study = get_object_or_404(Study, slug=slug)
    if request.method != "POST":
        return _page(request, study)
    form = ConnectionForm(request.POST)
    if form.is_valid():
        try:
            services.connection_set(study_id=study.pk, **form.cleaned_data)
        except REFUSED as error:
            add_form_errors(form, error)
        else:
            messages.success(request, _("Prolific connection saved. Test it to see Prolific's status and places."))
            return redirect("studies:prolific", slug=study.slug)
    return _page(request, study, form=form, status=400)


def _act(request, slug: str, action, done: str):
    """Run one Prolific action for the study and go back to its page with the outcome as a message."""
    study = get_object_or_404(Study, slug=slug)
    try:
        outcome = action(study)
    except REFUSED as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, outcome or done)
    return redirect("studies:prolific", slug=study.slug)


@researcher_required
@require_POST
def prolific_test_view(request, slug: str):
    def test(study):
        connection = services.connection_test(study_id=study.pk)
        return _("Connected: Prolific says %(status)s, %(places)s places.") % {
            "status": connection.prolific_status or "?", "places": connection.places if connection.places is not None
            else "?"}
    return _act(request, slug, test, "")


@researcher_required
@require_POST
def prolific_review_view(request, slug: str, submission_id: str):
    def review(study):
        if request.POST.get("action") == "approve":
            services.submission_approve(study_id=study.pk, submission_id=submission_id, user=request.user)
            return _("Submission %(id)s approved on Prolific.") % {"id": submission_id}
        form = RejectForm(request.POST)
        if not form.is_valid():
            raise SubmissionReviewRefused(" ".join(f"{form.fields[name].label}: {' '.join(errors)}"
                                    for name, errors in form.errors.items()))
        services.submission_reject(study_id=study.pk, submission_id=submission_id, user=request.user,
                                   **form.cleaned_data)
        return _("Submission %(id)s rejected on Prolific.") % {"id": submission_id}
    return _act(request, slug, review, "")


@researcher_required
@require_POST
def prolific_bonus_view(request, slug: str, action: str, pk: int | None = None):
    def bonus(study):
        if action == "propose":
            batch = services.bonus_batch_propose(study_id=study.pk, user=request.user)
            if batch is None:
                return _("No bonus to propose: everyone owed one is in a batch already.")
            return _("Bonus batch %(n)s proposed: %(total)s %(currency)s. Check it, then approve it.") % {
                "n": batch.pk, "total": batch.total, "currency": batch.currency}
        batch = get_object_or_404(BonusBatch, pk=pk, study=study)
        if action == "approve":
            services.bonus_batch_approve(batch_id=batch.pk, user=request.user)
            return _("Bonus batch %(n)s approved. Send it when ready.") % {"n": batch.pk}
        services.bonus_batch_check_sendable(batch_id=batch.pk)
        transaction.on_commit(lambda: send_bonus_batch.delay(batch.pk))
        return _("Bonus batch %(n)s is being sent by the worker; this page shows its state.") % {"n": batch.pk}
    return _act(request, slug, bonus, "")
