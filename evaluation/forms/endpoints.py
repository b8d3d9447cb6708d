"""The "Test connection" of the endpoint forms: the fields of EndpointForm the check reads (validation only)."""
from __future__ import annotations

from django import forms

from evaluation.models import EndpointKind
from evaluation.models.endpoints import key_variable_error


class EndpointCheckForm(forms.Form):
    kind = forms.ChoiceField(choices=EndpointKind.choices, required=False)
    base_url = forms.URLField(required=False, max_length=300, assume_scheme="https")
    model = forms.CharField(required=False, max_length=200)
    api_key_env = forms.CharField(required=False, max_length=100)
    timeout_s = forms.FloatField(required=False, min_value=0.1)

    def clean_kind(self) -> str:
        return self.cleaned_data.get("kind") or EndpointKind.OPENAI

    def clean_api_key_env(self) -> str:
        name = (self.cleaned_data.get("api_key_env") or "").strip()
        problem = key_variable_error(name) if name else None
        if problem:
            raise forms.ValidationError(problem)  # never repeats what was typed (it may be a pasted key)
        return name
