"""Admin change forms of versioned models: the form carries the version the page was opened at, so that a save over a
change someone made since is refused (the model's own edit service checks it again under its lock), never written
over it. A model admin sets ``form`` to a subclass that says how the refusal reads (``stale_message``)."""
from __future__ import annotations

from django import forms


class OpenedAtVersionForm(forms.ModelForm):
    #: At most the largest value of the integer columns that hold versions (a larger one is a form error, not a 500).
    base_version = forms.IntegerField(widget=forms.HiddenInput, required=False, min_value=1, max_value=2**31 - 1)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:  # a change (an addition has no version to start from)
            self.fields["base_version"].required = True
            self.fields["base_version"].initial = self.instance.version

    def stale_message(self, base_version: int) -> str:  # pragma: no cover - every subclass says it its way
        raise NotImplementedError

    def clean(self):
        data = super().clean()
        base = data.get("base_version")
        if self.instance.pk and base is not None and base != self.instance.version:
            raise forms.ValidationError(self.stale_message(base), code="stale_version")
        return data
