from django import forms
from django.utils.translation import gettext_lazy as _

from .models import STUDY_LANGUAGES, Study
from .participant_pages import ORIGINAL, language_param

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
    extra_languages = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label=_("Languages participants may switch to"),
        choices=[(code or ORIGINAL, label) for code, label in STUDY_LANGUAGES],
        help_text=_("Besides the study's language; the pages get a language switch. Items need translations."),
    )

    class Meta:
        model = Study
        fields = [
            "slug", "title", "status", "pool_split", "pool_sample", "seed", "pool_include_rejected",
            "per_participant", "raters", "time_limit_seconds", "question_time_limit_seconds", "grace_seconds",
            "language", "extra_languages", "consent_text", "instructions", "practice_item", "bonus_per_correct",
            "bonus_currency", "completion_code", "completion_url", "timeout_completion_code", "timeout_instruction",
        ]
        widgets = {
            "consent_text": forms.Textarea(attrs={"rows": 8}),
            "instructions": forms.Textarea(attrs={"rows": 4}),
            "timeout_instruction": forms.Textarea(attrs={"rows": 2}),
            "practice_item": forms.NumberInput(),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["extra_languages"] = [code or ORIGINAL for code in self.instance.extra_languages or []]
        self.fields["pool_split"].required = True
        self.fields["practice_item"].widget = forms.NumberInput()
        self.fields["practice_item"].help_text = _("Database id of an item shown as an untimed practice question.")

    def clean_extra_languages(self) -> list[str]:
        chosen = [language_param(code) for code in self.cleaned_data.get("extra_languages") or []]
        return [code for code in chosen if code != self.cleaned_data.get("language")]

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
