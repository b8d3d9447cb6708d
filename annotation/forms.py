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
