from django import forms


class ItemImportForm(forms.Form):
    file = forms.FileField(help_text="Official DetectBench JSONL, one record per line.")
    source = forms.CharField(initial="detectbench-v1.3", max_length=100)
    split = forms.CharField(initial="test", max_length=40)
    dry_run = forms.BooleanField(required=False, help_text="Validate and report only.")
    skip_invalid = forms.BooleanField(required=False, help_text="Import the valid lines and list the bad ones.")


class ItemFilterForm(forms.Form):
    split = forms.CharField(required=False)
    source = forms.CharField(required=False)
    status = forms.CharField(required=False)
    question_type = forms.CharField(required=False)
    q = forms.CharField(required=False, label="Search")
    page = forms.IntegerField(required=False, min_value=1)


# --------------------------------------------------------------------------
# Curation workflow forms.

from .models import CRITERIA, Criterion, Decision, ReviewAction, Stage  # noqa: E402


class VerificationForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices, widget=forms.RadioSelect)
    criteria = forms.MultipleChoiceField(choices=Criterion.choices, required=False,
                                         widget=forms.CheckboxSelectMultiple)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    item_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def clean(self):
        data = super().clean()
        criteria = data.get("criteria") or []
        if data.get("decision") == Decision.DELETE and not criteria:
            raise forms.ValidationError("A delete decision needs at least one criterion (1.1-1.5).")
        if data.get("decision") == Decision.KEEP and criteria:
            raise forms.ValidationError("An item that meets a deletion criterion cannot be kept.")
        return data


class RewriteForm(forms.Form):
    """Context, question, options (one field each) and the correct option; checked like Item.clean()."""

    context = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}))
    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    answer_index = forms.TypedChoiceField(coerce=int, widget=forms.RadioSelect)
    base_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def __init__(self, *args, option_count: int = 4, **kwargs):
        super().__init__(*args, **kwargs)
        data = args[0] if args else kwargs.get("data")
        if data is not None:
            option_count = max(2, sum(1 for key in data if key.startswith("option_")))
        for i in range(option_count):
            self.fields[f"option_{i}"] = forms.CharField(label=f"Option {i + 1}", max_length=2000, required=False)
        self.fields["answer_index"].choices = [(i, f"Option {i + 1}") for i in range(option_count)]
        self.option_count = option_count

    def option_fields(self):
        return [self[f"option_{i}"] for i in range(self.option_count)]

    def options(self) -> list[str]:
        return [(self.cleaned_data.get(f"option_{i}") or "").strip() for i in range(self.option_count)]

    def clean(self):
        data = super().clean()
        from .item_checks import option_checks

        problems = option_checks(self.options(), data.get("answer_index"))
        for problem in problems:
            self.add_error(None, problem.message)
        return data

    def changes(self) -> dict:
        return {"context": self.cleaned_data["context"], "question": self.cleaned_data["question"].strip(),
                "options": self.options(), "answer_index": self.cleaned_data["answer_index"]}


class ReviewForm(forms.Form):
    action = forms.ChoiceField(choices=ReviewAction.choices, widget=forms.RadioSelect)
    send_back_to = forms.ChoiceField(choices=[("", "—")] + [c for c in Stage.choices if c[0] != Stage.REVIEW],
                                     required=False)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    item_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def clean(self):
        data = super().clean()
        if data.get("action") == ReviewAction.SEND_BACK:
            if not data.get("send_back_to"):
                self.add_error("send_back_to", "Choose the stage to send the item back to.")
            if not (data.get("comment") or "").strip():
                self.add_error("comment", "Say what needs fixing.")
        return data


class AdjudicationForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices, widget=forms.RadioSelect)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class RevertForm(forms.Form):
    revision = forms.IntegerField(min_value=1)
    base_version = forms.IntegerField(min_value=1)


class EnterWorkflowForm(forms.Form):
    split = forms.CharField(required=False, max_length=40)
    source = forms.CharField(required=False, max_length=100)


CRITERIA_KEYS = {name: str(i + 1) for i, name in enumerate(CRITERIA)}
