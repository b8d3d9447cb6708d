from django import forms
from django.utils.translation import gettext_lazy as _

from .models import Study

RESERVED_SLUGS = {"a"}


class StudyForm(forms.ModelForm):
    """Study settings plus the item pool: a seeded sample of a split, or an explicit list (validates only)."""

    pool_items = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        label=_("Explicit item list"),
        help_text=_("Optional: external ids of the split (or database ids), separated by spaces, commas or lines. "
                    "Overrides the sample."),
    )

    completion_url = forms.URLField(required=False, assume_scheme="https", label=_("Completion URL"),
                                    help_text=_("Redirect after the last answer (Prolific style)."))

    class Meta:
        model = Study
        fields = [
            "slug", "title", "status", "pool_split", "pool_sample", "seed", "per_participant", "raters",
            "time_limit_seconds", "question_time_limit_seconds", "grace_seconds", "language", "consent_text",
            "instructions", "practice_item", "bonus_per_correct", "bonus_currency", "completion_code",
            "completion_url",
        ]
        widgets = {
            "consent_text": forms.Textarea(attrs={"rows": 4}),
            "instructions": forms.Textarea(attrs={"rows": 4}),
            "practice_item": forms.NumberInput(),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool_split"].required = True
        self.fields["practice_item"].widget = forms.NumberInput()
        self.fields["practice_item"].help_text = _("Database id of an item shown as an untimed practice question.")

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(_("This slug is reserved."))
        return slug

    def clean_pool_items(self) -> list[str]:
        """The explicit item list as tokens; which items they name is the service's business."""
        return (self.cleaned_data.get("pool_items") or "").replace(",", " ").split()


#: The form's fields that are study settings (passed to the setup services as they are).
SETTING_FIELDS = [name for name in StudyForm.Meta.fields if name != "slug"]


class ExtendForm(forms.Form):
    minutes = forms.IntegerField(min_value=1, max_value=24 * 60, initial=10)
