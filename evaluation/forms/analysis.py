"""Forms of the analysis pages: which split (always one), option order and flagged items a figure uses."""
from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from evaluation.models import OptionOrder
from evaluation.statistics.quality_checks import FLAG_KINDS


class FlagExclusionForm(forms.Form):
    """Leave out the items the data-quality report flags: every kind, or the kinds ticked."""

    exclude_flagged = forms.BooleanField(required=False, label=_("Exclude flagged items"),
                                         help_text=_("Every item the data-quality report flags, of any kind."))
    exclude = forms.MultipleChoiceField(choices=lambda: [(kind, gettext(text)) for kind, text in FLAG_KINDS.items()], required=False,
                                        widget=forms.CheckboxSelectMultiple,
                                        label=_("Exclude items flagged with"))

    def exclusion(self) -> tuple[str, ...]:
        """The flag kinds whose items are left out (none: nothing is excluded)."""
        if self.cleaned_data.get("exclude_flagged"):
            return tuple(FLAG_KINDS)
        return tuple(self.cleaned_data.get("exclude") or ())


class SplitForm(forms.Form):
    """A split must be chosen: nothing is computed over a silent mix of item sets."""

    split = forms.ChoiceField(choices=(), label=_("Split"))

    def __init__(self, *args, splits: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["split"].choices = [(s, s) for s in splits]


class OneScaleForm(SplitForm):
    """The one-scale page: a split and the item-response model (automatic unless one is forced)."""

    model = forms.ChoiceField(required=False, initial="auto", label=_("Model"), choices=[
        ("auto", _("automatic (2PL with enough answers per item, else Rasch)")), ("2pl", "2PL"), ("rasch", "Rasch")])

    def clean_model(self) -> str:
        return self.cleaned_data.get("model") or "auto"


class FigureForm(SplitForm, FlagExclusionForm):
    option_order = forms.ChoiceField(choices=[("", _("any (each run labelled)"))] + list(OptionOrder.choices),
                                     required=False, initial=OptionOrder.ORIGINAL, label=_("Option order"))
    runs = forms.TypedMultipleChoiceField(
        coerce=int, choices=(), required=False, widget=forms.CheckboxSelectMultiple, label=_("Runs"),
        help_text=_("None ticked: the latest finished run of each method and model on the split."))

    def __init__(self, *args, run_choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["runs"].choices = [(run.pk, run_choice_label(run)) for run in run_choices]


def run_choice_label(run) -> str:
    """A run as a person picks it from a list: method, model, option order, date and its number."""
    from evaluation.prompting.methods import METHODS

    method = METHODS[run.method].label if run.method in METHODS else run.method
    return f"{method} · {run.endpoint.name} · {run.option_order} · {run.created_at:%Y-%m-%d %H:%M} (#{run.pk})"
