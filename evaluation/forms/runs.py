from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.item_facts import QUESTION_TYPES
from annotation.models import ItemStatus
from evaluation.forms.analysis import FlagExclusionForm
from evaluation.models import ModelEndpoint, OptionOrder
from evaluation.prompting.methods import method_choices
from evaluation.statistics.paired import CORRECTIONS
from foundation.numerals import is_number


class EndpointForm(forms.ModelForm):
    base_url = forms.URLField(required=False, max_length=300, assume_scheme="https",
                              label=_("Base URL"), help_text=_("e.g. https://api.openai.com/v1 or http://localhost:8000/v1"))

    class Meta:
        model = ModelEndpoint
        fields = ["name", "kind", "base_url", "model", "api_key_env", "temperature", "top_p", "max_tokens", "seed",
                  "max_concurrency", "requests_per_minute", "timeout_s", "max_attempts", "price_in_per_mtok",
                  "price_out_per_mtok", "use_cache"]
        help_texts = {"api_key_env": _("The NAME of an environment variable of the workers, e.g. OPENAI_API_KEY.")}
        labels = {"name": _("Name"), "kind": _("Kind"), "model": _("Model"), "api_key_env": _("API key variable"),
                  "temperature": _("Temperature"), "top_p": _("Top p"), "max_tokens": _("Max tokens"), "seed": _("Seed"),
                  "max_concurrency": _("Max concurrency"), "requests_per_minute": _("Requests per minute"),
                  "timeout_s": _("Timeout (s)"), "max_attempts": _("Max attempts"),
                  "price_in_per_mtok": _("Price in (per million tokens)"),
                  "price_out_per_mtok": _("Price out (per million tokens)"), "use_cache": _("Use the cache")}

    table9_preset = forms.BooleanField(required=False, label=_("Use the paper's Table 9 parameters"),
                                       help_text=_("temperature 0.95, top_p 0.95, max_tokens 2000, seed 42"))
    #: The version the page was opened at (services.endpoint_update refuses a change made from an older one).
    version = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["version"].initial = self.instance.version
            self.initial["base_url"] = self.instance.shown_base_url  # never a credential stored before

    def settings(self) -> dict:
        """The endpoint's settings as ``services.endpoint_create`` / ``endpoint_update`` take them."""
        return {k: v for k, v in self.cleaned_data.items() if k != "version"}

    def _post_clean(self):
        super()._post_clean()
        refused = [name for name in ("api_key_env", "base_url") if name in self.errors]
        if refused:
            # A refused "variable name" may be a key pasted by mistake, a refused URL may hold one: never send
            # them back in the page.
            self.data = self.data.copy()
            for name in refused:
                self.data[name] = ""


MAX_INT = 2**31 - 1  # the database's integer columns
MAX_IDS = 5000


def parse_item_ids(raw: str) -> list[int]:
    """Comma-separated item ids -> a list of positive ids (ValidationError naming the bad part)."""
    ids = []
    for part in raw.replace(" ", "").split(","):
        if not part:
            continue
        if not is_number(part, most_digits=10) or not 1 <= int(part) <= MAX_INT:
            raise forms.ValidationError(_("Item ids must be positive whole numbers separated by commas."))
        ids.append(int(part))
    if len(ids) > MAX_IDS:
        raise forms.ValidationError(_("At most %(n)s item ids.") % {"n": MAX_IDS})
    return ids


MAX_SWEEP_ENDPOINTS = 50


class RunLaunchForm(forms.Form):
    """A sweep: every ticked endpoint x every ticked method over one item selection, one run each.

    Nothing is ticked unless asked for (``?endpoint=`` ticks that endpoint), so a launch makes exactly
    the runs chosen. A single ``endpoint`` value (the form before sweeps) is taken as ``endpoints``."""

    endpoints = forms.ModelMultipleChoiceField(queryset=ModelEndpoint.objects.order_by("name"),
                                               widget=forms.CheckboxSelectMultiple,
                                               label=_("Endpoints"),
                                               help_text=_("Each endpoint ticked is asked with every method ticked."))
    methods = forms.MultipleChoiceField(choices=method_choices, widget=forms.CheckboxSelectMultiple,
                                        label=_("Methods"),
                                        help_text=_("Each (endpoint, method) ticked becomes a run of its own."))
    split = forms.CharField(initial="test", required=False, max_length=40, label=_("Split"))
    item_status = forms.ChoiceField(choices=[("", _("any"))] + list(ItemStatus.choices), required=False,
                                    label=_("Item status"))
    question_type = forms.ChoiceField(choices=[("", _("any"))] + [(t, t) for t in QUESTION_TYPES], required=False,
                                      label=_("Question type"))
    ids = forms.CharField(required=False, label=_("Item ids"), help_text=_("Comma-separated item ids (optional)"))
    limit = forms.IntegerField(min_value=1, max_value=MAX_INT, required=False, label=_("Limit"))
    seed = forms.IntegerField(initial=42, min_value=0, max_value=MAX_INT, label=_("Seed"))
    samples = forms.IntegerField(min_value=1, max_value=50, initial=1, label=_("Samples"))
    k = forms.IntegerField(min_value=1, max_value=50, required=False,
                           label=_("k"),
                           help_text=_("Samples per answer for self-consistency / complexity-CoT (default 5)"))
    option_order = forms.ChoiceField(choices=OptionOrder.choices, initial=OptionOrder.ORIGINAL, label=_("Option order"))
    chunk_size = forms.IntegerField(min_value=1, max_value=10_000, initial=400, required=False,
                                    label=_("Items per task"),
                                    help_text=_("A run is computed in tasks of at most this many items, "
                                                "split evenly over the worker processes."))
    no_preflight = forms.BooleanField(
        required=False, label=_("Launch without checking the endpoints"),
        help_text=_("Unticked, each remote endpoint is first asked for its models (or one tiny completion), and "
                    "a launch on an endpoint that cannot serve is refused with the reason."))

    def __init__(self, data=None, *args, **kwargs):
        if data is not None and "endpoints" not in data and data.get("endpoint"):
            data = data.copy()
            if hasattr(data, "setlist"):  # a QueryDict
                data.setlist("endpoints", data.getlist("endpoint"))
            else:
                data["endpoints"] = [data["endpoint"]]
        super().__init__(data, *args, **kwargs)

    def clean_ids(self) -> list[int]:
        return parse_item_ids(self.cleaned_data.get("ids") or "")

    def clean_endpoints(self):
        endpoints = self.cleaned_data.get("endpoints")
        if endpoints is not None and len(endpoints) > MAX_SWEEP_ENDPOINTS:
            raise forms.ValidationError(_("At most %(n)s endpoints in one sweep.") % {"n": MAX_SWEEP_ENDPOINTS})
        return endpoints

    def selection(self) -> dict:
        """Keyword arguments of ``services.sweep_launch`` / ``sweeps.sweep_estimate`` (endpoints and methods apart)."""
        d = self.cleaned_data
        return {"split": d.get("split") or "", "item_status": d.get("item_status") or "",
                "question_type": d.get("question_type") or "", "ids": d.get("ids") or [], "limit": d.get("limit"),
                "seed": d.get("seed") if d.get("seed") is not None else 42, "samples": d.get("samples") or 1,
                "k": d.get("k"), "option_order": d.get("option_order") or OptionOrder.ORIGINAL,
                "chunk_size": d.get("chunk_size") or 400}


def parse_run_ids(raw: str) -> list[int]:
    """Comma-separated run ids (the same rules as item ids)."""
    return parse_item_ids(raw)


class RunPicker(forms.SelectMultiple):
    """A list of runs to tick; ``runs=3,5`` and ``runs=3&runs=5`` in the URL mean the same."""

    def value_from_datadict(self, data, files, name):
        values = data.getlist(name) if hasattr(data, "getlist") else [data.get(name) or ""]
        return [part.strip() for value in values for part in str(value).split(",") if part.strip()]

    def format_value(self, value):
        return [str(v) for v in (value or [])]


class RunsField(forms.Field):
    widget = RunPicker

    def to_python(self, value) -> list[int]:
        return parse_run_ids(",".join(value or []))


def finished_run_choices(limit: int = 500) -> list[tuple[int, str]]:
    """The newest finished runs as a person picks them: method, model, option order, date, number and split."""
    from evaluation.forms.analysis import run_choice_label
    from evaluation.models import Run, RunStatus

    runs = (Run.objects.select_related("endpoint").defer("item_ids", "requested_ids")
            .filter(status=RunStatus.FINISHED).order_by("-created_at")[:limit])
    return [(run.pk, f"{run_choice_label(run)} · {run.split or 'any split'}") for run in runs]


class LeaderboardForm(FlagExclusionForm):
    """The selection of a leaderboard: a split, or chosen runs (then their common items); never neither."""

    split = forms.CharField(required=False, max_length=40)
    runs = RunsField(required=False, help_text=_("Runs to show instead of a split (their common items)"))
    option_order = forms.ChoiceField(choices=OptionOrder.choices, initial=OptionOrder.ORIGINAL, required=False)
    common = forms.BooleanField(required=False, label=_("Only the items common to every cell"))
    reference = forms.CharField(required=False, max_length=400, help_text=_("METHOD@ENDPOINT of the reference cell"))
    pairwise = forms.ChoiceField(required=False, label=_("Every pair"), help_text=_("Compare every pair of cells (and "
                                 "humans against each), with this correction for multiplicity"),
                                 choices=lambda: [("", gettext("off"))] + [(k, f"{name} ({gettext(controls)})")
                                                                          for k, (name, controls) in CORRECTIONS.items()])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["runs"].widget.choices = finished_run_choices()

    def clean_option_order(self) -> str:
        return self.cleaned_data.get("option_order") or OptionOrder.ORIGINAL

    def selection(self) -> dict:
        """Keyword arguments of ``leaderboard.leaderboard``."""
        d = self.cleaned_data
        return {"split": d["split"], "run_ids": d["runs"], "option_order": d["option_order"], "common": d["common"],
                "reference": d["reference"], "exclude": self.exclusion()}


class RunCompareForm(FlagExclusionForm):
    """Two runs picked from a list (method, model, option order, date and number; the newest finished first)."""

    a = forms.IntegerField(min_value=1, max_value=MAX_INT, label=_("Run A"))
    b = forms.IntegerField(min_value=1, max_value=MAX_INT, label=_("Run B"))

    #: How many finished runs the lists offer (an older run is still reached by its number in the URL).
    CHOICES = 500

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "—")] + finished_run_choices(self.CHOICES)
        for name in ("a", "b"):
            self.fields[name].widget = forms.Select(choices=choices)


class ResultFilterForm(forms.Form):
    """The run page's row filters."""

    status = forms.ChoiceField(required=False, choices=[("", _("all")), ("correct", _("correct")), ("wrong", _("wrong")),
                                                        ("parse_failure", _("parse failures")), ("error", _("errors")),
                                                        ("stale", _("stale (item changed since)"))])
    question_type = forms.ChoiceField(required=False, choices=[("", _("any type"))] + [(t, t) for t in QUESTION_TYPES])
