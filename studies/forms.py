from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import Item

from .models import Study

RESERVED_SLUGS = {"a"}


class StudyForm(forms.ModelForm):
    """Study settings plus the item pool: a seeded sample of a split, or an explicit list."""

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

    def clean(self):
        data = super().clean()
        split = data.get("pool_split")
        raw = (data.get("pool_items") or "").replace(",", " ").split()
        if raw and split:
            by_external = dict(Item.objects.filter(split=split, external_id__in=raw).values_list("external_id", "id"))
            ids, missing = [], []
            for token in raw:
                if token in by_external:
                    ids.append(by_external[token])
                elif token.isdigit() and Item.objects.filter(pk=int(token)).exists():
                    ids.append(int(token))
                else:
                    missing.append(token)
            if missing:
                self.add_error("pool_items", _("Unknown items: %(ids)s") % {"ids": ", ".join(missing[:10])})
            data["item_ids"] = ids
        else:
            data["item_ids"] = None
        return data


class ExtendForm(forms.Form):
    minutes = forms.IntegerField(min_value=1, max_value=24 * 60, initial=10)
