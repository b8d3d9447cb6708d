"""The study form (validates only; the setup services decide): times in minutes, the split and the practice
item picked from the items there are, and every message in words."""
from __future__ import annotations

from decimal import Decimal

from django import forms
from django.db.models import Count, Q
from django.utils.translation import gettext_lazy as _

from annotation.models import Item, ItemStatus
from foundation.numerals import is_number
from studies.models import STUDY_LANGUAGES, Study
from studies.views.participant_pages import ORIGINAL, language_param

RESERVED_SLUGS = {"a", "prolific"}  # "prolific": /studies/prolific/webhook/

#: The form's sections, in the order a researcher fills them in (the template draws one fieldset each).
SECTIONS = [
    (_("Study"), ["slug", "title", "status", "language", "extra_languages"]),
    (_("Item pool"), ["pool_split", "pool_sample", "seed", "pool_include_rejected", "pool_items",
                      "exclude_untranslated"]),
    (_("Participants and time"), ["per_participant", "raters", "time_limit_minutes", "question_time_limit_minutes",
                                  "grace_seconds"]),
    (_("Pages"), ["consent_text", "instructions", "practice_item"]),
    (_("Pay and completion"), ["bonus_per_correct", "bonus_currency", "completion_code", "completion_url",
                               "timeout_completion_code", "timeout_instruction"]),
    (_("Screening"), ["screening_question", "screening_options", "screening_pass", "screen_out_code"]),
]

#: The study settings the services take (model field names: the form's minutes become seconds).
SETTING_FIELDS = [
    "title", "status", "pool_split", "pool_sample", "seed", "pool_include_rejected", "per_participant", "raters",
    "time_limit_seconds", "question_time_limit_seconds", "grace_seconds", "language", "extra_languages",
    "consent_text", "instructions", "practice_item", "bonus_per_correct", "bonus_currency", "completion_code",
    "completion_url", "timeout_completion_code", "timeout_instruction", "screening_question", "screening_options",
    "screening_pass", "screen_out_code",
]

MAX_MINUTES = 24 * 60


def _minutes(seconds: int | None) -> int | Decimal | None:
    """Seconds as minutes for the form (30, 5.03), exact enough that saving unchanged gives the same seconds back."""
    if seconds is None:
        return None
    minutes = (Decimal(seconds) / 60).quantize(Decimal("0.01"))
    return int(minutes) if minutes == minutes.to_integral_value() else minutes.normalize()


def _seconds(minutes: Decimal | None) -> int | None:
    return None if minutes is None else int((minutes * 60).to_integral_value())


class StudyForm(forms.ModelForm):
    """Study settings plus the item pool: a seeded sample of a split, or an explicit list (validates only)."""

    pool_split = forms.ChoiceField(label=_("Split"), help_text=_("The items the pool is drawn from."),
                                   error_messages={"invalid_choice": _("There is no split “%(value)s”: import its "
                                                                       "items first.")})
    pool_sample = forms.IntegerField(
        required=False, min_value=1, label=_("Sample size"),
        help_text=_("How many items of the split to draw (seeded); empty = all of them."),
        error_messages={"min_value": _("Draw at least one item, or leave empty for all.")})
    pool_items = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        label=_("Explicit item list"),
        help_text=_("Optional: external ids of the split (or database ids), separated by spaces, commas or lines. "
                    "Overrides the sample."),
    )
    exclude_untranslated = forms.BooleanField(
        required=False, label=_("Leave out items without a translation"),
        help_text=_("Drops the pool items that lack a translation into one of the study's languages "
                    "(a study in a language cannot open while any lacks one)."),
    )
    per_participant = forms.IntegerField(
        min_value=1, max_value=1000, label=_("Questions per participant"),
        error_messages={"min_value": _("Each participant needs at least one question.")})
    raters = forms.IntegerField(
        min_value=1, max_value=1000, label=_("Raters per item"), help_text=_("Answers wanted per item."),
        error_messages={"min_value": _("Each item needs at least one rater.")})
    time_limit_minutes = forms.DecimalField(
        min_value=1, max_value=MAX_MINUTES, max_digits=7, decimal_places=2, label=_("Time limit (minutes)"),
        help_text=_("For the whole attempt, counted by the server from Start."),
        error_messages={"min_value": _("Give the participants at least 1 minute."),
                        "max_value": _("The time limit can be at most 24 hours (1440 minutes).")})
    question_time_limit_minutes = forms.DecimalField(
        required=False, min_value=Decimal("0.5"), max_value=MAX_MINUTES, max_digits=7, decimal_places=2,
        label=_("Time limit per question (minutes)"), help_text=_("Optional; empty = none."),
        error_messages={"min_value": _("A question needs at least half a minute.")})
    grace_seconds = forms.IntegerField(
        min_value=0, max_value=300, label=_("Grace period (seconds)"),
        help_text=_("Answers this many seconds after a deadline are accepted and flagged late."),
        error_messages={"min_value": _("The grace period cannot be negative.")})
    bonus_per_correct = forms.DecimalField(
        min_value=0, max_digits=7, decimal_places=2, label=_("Bonus per correct answer"),
        error_messages={"min_value": _("The bonus cannot be negative.")})
    practice_item = forms.ModelChoiceField(
        queryset=Item.objects.none(), required=False, label=_("Practice item"),
        widget=forms.Select(attrs={"translate": "no"}),  # the choices are items' questions: data
        help_text=_("Shown untimed before Start, with feedback; never one of the study's items."))
    completion_url = forms.URLField(required=False, assume_scheme="https", label=_("Completion URL"),
                                    help_text=_("Redirect after the last answer (Prolific style)."))
    screening_options = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), label=_("Screening options"),
        help_text=_("The answers to choose from, one per line."))
    screening_pass = forms.CharField(
        required=False, label=_("Passing options"),
        help_text=_("The numbers of the options that pass (1 = the first line), e.g. “1” or “1, 3”; any other "
                    "answer screens the participant out."))
    extra_languages = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label=_("Languages participants may switch to"),
        choices=[(code or ORIGINAL, label) for code, label in STUDY_LANGUAGES],
        help_text=_("Besides the study's language; the pages get a language switch. Items need translations."),
    )

    class Meta:
        model = Study
        fields = [
            "slug", "title", "status", "pool_split", "pool_sample", "seed", "pool_include_rejected",
            "per_participant", "raters", "grace_seconds", "language", "extra_languages", "consent_text",
            "instructions", "practice_item", "bonus_per_correct", "bonus_currency", "completion_code",
            "completion_url", "timeout_completion_code", "timeout_instruction", "screening_question",
            "screening_options", "screening_pass", "screen_out_code",
        ]
        labels = {
            "pool_include_rejected": _("Include items annotators rejected"), "slug": _("Slug"), "title": _("Title"),
            "status": _("Status"), "seed": _("Seed"), "language": _("Language"), "consent_text": _("Consent text"),
            "instructions": _("Instructions"), "bonus_currency": _("Bonus currency"),
            "completion_code": _("Completion code"), "timeout_completion_code": _("Timeout completion code"),
            "timeout_instruction": _("Timeout instruction"), "screening_question": _("Screening question"),
            "screen_out_code": _("Screen-out code"),
        }
        widgets = {
            "consent_text": forms.Textarea(attrs={"rows": 8}),
            "instructions": forms.Textarea(attrs={"rows": 4}),
            "timeout_instruction": forms.Textarea(attrs={"rows": 2}),
            "screening_question": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        study = self.instance
        self.initial["screening_options"] = "\n".join(study.screening_options or [])
        self.initial["screening_pass"] = ", ".join(str(i + 1) for i in study.screening_pass or [])
        if study.pk:
            self.initial["extra_languages"] = [code or ORIGINAL for code in study.extra_languages or []]
            self.initial["time_limit_minutes"] = _minutes(study.time_limit_seconds)
            self.initial["question_time_limit_minutes"] = _minutes(study.question_time_limit_seconds)
        else:
            self.initial.setdefault("time_limit_minutes", _minutes(study.time_limit_seconds))
            # Fields declared here do not take the model's defaults: a new study starts from them too.
            for name in ("grace_seconds", "bonus_per_correct"):
                self.initial.setdefault(name, getattr(study, name))
        self.fields["pool_split"].choices = _split_choices(current=self.initial.get("pool_split") or study.pool_split)
        self.fields["practice_item"].queryset = Item.objects.exclude(status=ItemStatus.REJECTED)
        self.fields["practice_item"].choices = _item_choices(self.fields["practice_item"].queryset)
        self.order_fields([name for _, names in SECTIONS for name in names])

    def sections(self):
        """(title, bound fields) per section, for the template."""
        return [(title, [self[name] for name in names if name in self.fields]) for title, names in SECTIONS]

    def clean_extra_languages(self) -> list[str]:
        chosen = [language_param(code) for code in self.cleaned_data.get("extra_languages") or []]
        return [code for code in chosen if code != self.cleaned_data.get("language")]

    def clean_screening_options(self) -> list[str]:
        return [line.strip() for line in (self.cleaned_data.get("screening_options") or "").splitlines()
                if line.strip()]

    def clean_screening_pass(self) -> list[int]:
        """Option numbers as the researcher counts them (from 1), stored from 0."""
        words = (self.cleaned_data.get("screening_pass") or "").replace(",", " ").split()
        if not all(is_number(word, most_digits=9) and int(word) >= 1 for word in words):
            raise forms.ValidationError(_("Passing options: option numbers (1 = the first), e.g. “1, 3”."))
        options = self.cleaned_data.get("screening_options") or []
        too_big = [word for word in words if int(word) > len(options)]
        if too_big:
            raise forms.ValidationError(_("There is no option %(n)s: the screening question has %(count)d.") % {
                "n": too_big[0], "count": len(options)})
        return sorted({int(word) - 1 for word in words})

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(_("This slug is reserved."))
        return slug

    def clean_pool_items(self) -> list[str]:
        """The explicit item list as tokens; which items they name is the service's business."""
        return (self.cleaned_data.get("pool_items") or "").replace(",", " ").split()

    def clean(self):
        data = super().clean()
        data["time_limit_seconds"] = _seconds(data.get("time_limit_minutes"))
        data["question_time_limit_seconds"] = _seconds(data.get("question_time_limit_minutes"))
        per = data.get("per_participant")
        if per and data.get("pool_sample") and per > data["pool_sample"] and not data.get("pool_items"):
            self.add_error("per_participant", _("Each participant needs %(per)d distinct items, more than the "
                                                "sample of %(n)d.") % {"per": per, "n": data["pool_sample"]})
        return data


def _split_choices(*, current: str = "") -> list[tuple[str, str]]:
    """Every split with its number of items (and of rejected ones), plus the study's own if it has none left."""
    rows = (Item.objects.values("split").annotate(n=Count("id"), rejected=Count("id", filter=Q(
        status=ItemStatus.REJECTED))).order_by("split"))
    choices = []
    for row in rows:
        label = _("%(split)s (%(n)d items)") % {"split": row["split"], "n": row["n"]}
        if row["rejected"]:
            label = _("%(split)s (%(n)d items, %(rejected)d rejected)") % {**row}
        choices.append((row["split"], label))
    if current and current not in {value for value, _ in choices}:
        choices.append((current, _("%(split)s (no items)") % {"split": current}))
    return [("", "—"), *choices]


def _item_choices(queryset) -> list:
    """The items as a picker shows them: grouped by split, each with its id and the start of its question."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for item in queryset.order_by("split", "id").only("id", "source", "external_id", "split", "question"):
        question = item.question if len(item.question) <= 70 else item.question[:67] + "…"
        groups.setdefault(item.split, []).append((item.pk, f"{item.source} #{item.external_id} — {question}"))
    return [("", "—"), *[(split, options) for split, options in groups.items()]]


class ExtendForm(forms.Form):
    minutes = forms.IntegerField(min_value=1, max_value=24 * 60, initial=10)
