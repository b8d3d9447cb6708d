"""Forms of belief-label review: a reviewer's answer, a queue's review policy, a draft decision."""
from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.forms import NamedErrorsMixin
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
    """What a researcher sets per queue: order, random share, k, blind review, accept threshold, lease time."""

    order = forms.ChoiceField(choices=ReviewOrder.choices)
    random_share = forms.FloatField(
        min_value=0, max_value=1,
        help_text=_("The share of hand-outs drawn uniformly at random: they make the uniform sample every trust "
                    "estimate rests on. 0 in triage order gives no uniform sample, so no unbiased estimate: the "
                    "trust figures then refuse to estimate beyond the labels reviewed."))
    reviewers_per_label = forms.IntegerField(min_value=1, max_value=20)
    accept_threshold = forms.FloatField(min_value=0, max_value=1, required=False)
    lease_minutes = forms.IntegerField(min_value=1, max_value=24 * 60)

    class Meta:
        model = BeliefQueue
        fields = ("order", "random_share", "reviewers_per_label", "blind", "accept_threshold", "lease_minutes")

    def policy(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.Meta.fields}


class DraftDecisionForm(forms.Form):
    action = forms.ChoiceField(choices=[("accept", "accept"), ("edit", "edit"), ("discard", "discard")])
    base_version = forms.IntegerField(min_value=1)
