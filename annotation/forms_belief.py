"""Forms of belief-label review: a reviewer's answer, a queue's review policy, a draft decision."""
from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.forms import NamedErrorsMixin, version_field
from annotation.models import BeliefQueue, ReviewOrder

MAX_REVIEW_COMMENT = 2000


class BeliefReviewForm(NamedErrorsMixin, forms.Form):
    """The reviewer's label for a judge label, among the label's choices."""

    human_label = forms.ChoiceField(choices=())
    comment = forms.CharField(required=False, max_length=MAX_REVIEW_COMMENT, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, choices: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["human_label"].choices = [(c, c) for c in choices]


class BeliefPolicyForm(NamedErrorsMixin, forms.ModelForm):
    """What a researcher sets per queue: order, random share, k, blind review, accept threshold, lease time, precision
    target."""

    order = forms.ChoiceField(choices=ReviewOrder.choices)
    random_share = forms.FloatField(
        min_value=0, max_value=1,
        help_text=_("The share of hand-outs drawn uniformly at random: they make the uniform sample every trust "
                    "estimate rests on. 0 in triage order gives no uniform sample, so no unbiased estimate: the "
                    "trust figures then refuse to estimate beyond the labels reviewed."))
    reviewers_per_label = forms.IntegerField(min_value=1, max_value=20)
    accept_threshold = forms.FloatField(min_value=0, max_value=1, required=False)
    lease_minutes = forms.IntegerField(min_value=1, max_value=24 * 60)
    target_half_width = forms.FloatField(
        required=False, label=_("Target half-width"),
        # xgettext:no-python-format
        help_text=_("Review until precise enough: once the 95% confidence sequence of the queue's share (from the "
                    "uniform sample) is at most this wide each side, e.g. 0.05, the queue hands out no more labels. "
                    "Empty: no target. Lower or clear it to reopen the queue."))

    class Meta:
        model = BeliefQueue
        fields = ("order", "random_share", "reviewers_per_label", "blind", "accept_threshold", "lease_minutes",
                  "target_half_width")

    def clean_target_half_width(self):
        value = self.cleaned_data.get("target_half_width")
        if value is not None and not 0 < value < 0.5:
            raise forms.ValidationError(
                _("above 0 and below 0.5 (e.g. 0.05), or empty for no target."))
        return value

    def policy(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.Meta.fields}


class DraftDecisionForm(NamedErrorsMixin, forms.Form):
    action = forms.ChoiceField(choices=[("accept", "accept"), ("edit", "edit"), ("discard", "discard")])
    base_version = version_field()
