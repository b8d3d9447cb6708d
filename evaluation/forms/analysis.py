"""Forms of the analysis pages: which split (always one), option order and flagged items a figure uses."""
from django import forms
from django.utils.translation import gettext_lazy as _

from evaluation.models import OptionOrder
from evaluation.statistics.quality_checks import FLAG_KINDS


class FlagExclusionForm(forms.Form):
    """Leave out the items the data-quality report flags: every kind, or the kinds ticked."""

    exclude_flagged = forms.BooleanField(required=False, label=_("Exclude flagged items"),
                                         help_text=_("Every item the data-quality report flags, of any kind."))
    exclude = forms.MultipleChoiceField(choices=list(FLAG_KINDS.items()), required=False,
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


class FigureForm(SplitForm, FlagExclusionForm):
    option_order = forms.ChoiceField(choices=[("", _("any (each run labelled)"))] + list(OptionOrder.choices),
                                     required=False, initial=OptionOrder.ORIGINAL, label=_("Option order"))
