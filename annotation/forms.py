"""Forms of the annotation pages: item import and filters, then the curation workflow's editors."""
from __future__ import annotations

import json
import re
from dataclasses import replace

from django import forms
from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.clue_graph.editing import EditableGraph, EditableStep
from annotation.item_checks import option_checks
from annotation.models import CRITERIA, MAX_VERSION, Criterion, Decision, Draft, ReviewAction, Stage


class ItemImportForm(forms.Form):
    file = forms.FileField(label=_("File"), help_text=_("Official DetectBench JSONL, one record per line."))
    source = forms.CharField(label=_("Source"), initial="detectbench-v1.3", max_length=100)
    split = forms.CharField(initial="test", max_length=40)
    dry_run = forms.BooleanField(required=False, label=_("Dry run"), help_text=_("Validate and report only."))
    skip_invalid = forms.BooleanField(required=False, label=_("Skip invalid"),
                                      help_text=_("Import the valid lines and list the bad ones."))
    curated = forms.ChoiceField(
        label=_("Items edited in the app"), initial="refuse", required=False,
        choices=[("refuse", _("Refuse the import and list them (nothing is written)")),
                 ("keep", _("Keep the app's edits; import the rest")),
                 ("overwrite", _("Overwrite them with the file (a new revision that names what it replaced)"))])

    def clean_curated(self) -> str:
        return self.cleaned_data.get("curated") or "refuse"

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = settings.ITEM_IMPORT_MAX_FILE_BYTES
        if upload.size > limit:
            raise forms.ValidationError(gettext("%(name)s has %(size)s bytes: an import takes at most %(limit)s "
                                                "(ITEM_IMPORT_MAX_FILE_BYTES); split the file.") % {
                "name": upload.name, "size": f"{upload.size:,}", "limit": f"{limit:,}"}, code="max_size")
        return upload


def version_field(**kwargs) -> forms.IntegerField:
    """A version (or revision) number a page sends back: 1 to MAX_VERSION, the most the database's columns hold."""
    return forms.IntegerField(min_value=1, max_value=MAX_VERSION, **kwargs)


class ItemFilterForm(forms.Form):
    split = forms.CharField(required=False)
    source = forms.CharField(required=False)
    status = forms.CharField(required=False)
    question_type = forms.CharField(required=False)
    q = forms.CharField(required=False, label="Search")
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_VERSION)


# --------------------------------------------------------------------------
# Curation workflow forms.

# Server-side size limits: the same as an import's (settings ITEM_IMPORT_MAX_*), so any item that can be imported
# can be edited (the longest real DetectBench context has ~2,000 characters).
MAX_CONTEXT = settings.ITEM_IMPORT_MAX_CONTEXT_CHARS
MAX_QUESTION = settings.ITEM_IMPORT_MAX_QUESTION_CHARS
MAX_OPTION = settings.ITEM_IMPORT_MAX_OPTION_CHARS
MAX_OPTIONS = settings.ITEM_IMPORT_MAX_OPTIONS
MAX_COMMENT = 5_000
MAX_NOTE = 500
MAX_GRAPH_TEXT = 2_000
MAX_GRAPH_ROWS = 200


_WHOLE_NUMBER = re.compile(r"[0-9]{1,19}")


def draft_order(post, *, explicit: bool = False) -> tuple[int, int]:
    """(page, seq) of a draft save from the editor's hidden `draft_page` and the page's count `draft_seq`
    (annotation.services.draft_save); anything else there counts as 0, the oldest, which never replaces a draft
    saved with them. `explicit`: a save the annotator asked for, after every autosave of its page."""

    def number(name: str, limit: int) -> int:
        raw = post.get(name) or ""
        return int(raw) if _WHOLE_NUMBER.fullmatch(raw) and int(raw) <= limit else 0

    page = number("draft_page", 2**63 - 1)
    return page, (Draft.EXPLICIT_SAVE if explicit else number("draft_seq", Draft.EXPLICIT_SAVE - 1))


class NamedErrorsMixin:
    """Errors as one list of messages, each naming the field it is about ("Question: This field is required.")."""

    def named_errors(self, *fields: str) -> list[str]:
        """Every error, or only those of `fields`."""
        return [self._named(name, e) for name, errors in self.errors.as_data().items() for e in errors
                if not fields or name in fields]

    def size_errors(self) -> list[str]:
        """Only the errors about input that is too long or too large."""
        return [self._named(name, e) for name, errors in self.errors.as_data().items() for e in errors
                if e.code == "max_length"]

    def _named(self, name: str, error: forms.ValidationError) -> str:
        field = self.fields.get(name)
        message = error.messages[0]
        return f"{field.label or name.replace('_', ' ').capitalize()}: {message}" if field is not None else message


class VerificationForm(NamedErrorsMixin, forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices, widget=forms.RadioSelect)
    criteria = forms.MultipleChoiceField(choices=Criterion.choices, required=False,
                                         widget=forms.CheckboxSelectMultiple)
    comment = forms.CharField(required=False, max_length=MAX_COMMENT, widget=forms.Textarea(attrs={"rows": 2}))
    item_version = version_field(widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        criteria = data.get("criteria") or []
        if data.get("decision") == Decision.DELETE and not criteria:
            raise forms.ValidationError(gettext("A delete decision needs at least one criterion (1.1-1.5)."))
        if data.get("decision") == Decision.KEEP and criteria:
            raise forms.ValidationError(gettext("An item that meets a deletion criterion cannot be kept."))
        return data


class RewriteForm(NamedErrorsMixin, forms.Form):
    """Context, question, options (one field each) and the correct option; checked like Item.clean()."""

    context = forms.CharField(max_length=MAX_CONTEXT, widget=forms.Textarea(attrs={"rows": 10}))
    question = forms.CharField(max_length=MAX_QUESTION, widget=forms.Textarea(attrs={"rows": 2}))
    answer_index = forms.TypedChoiceField(coerce=int, widget=forms.RadioSelect, label="Correct option")
    base_version = version_field(widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=MAX_NOTE, label="Note")

    def __init__(self, *args, option_count: int = 4, **kwargs):
        super().__init__(*args, **kwargs)
        data = args[0] if args else kwargs.get("data")
        self.too_many_options = False
        if data is not None:
            option_count = max(2, sum(1 for key in data if key.startswith("option_")))
            if option_count > MAX_OPTIONS:
                self.too_many_options, option_count = True, MAX_OPTIONS
        for i in range(option_count):
            self.fields[f"option_{i}"] = forms.CharField(label=f"Option {i + 1}", max_length=MAX_OPTION,
                                                         required=False)
        self.fields["answer_index"].choices = [(i, f"Option {i + 1}") for i in range(option_count)]
        self.option_count = option_count

    def option_fields(self):
        return [self[f"option_{i}"] for i in range(self.option_count)]

    def options(self) -> list[str]:
        return [(self.cleaned_data.get(f"option_{i}") or "").strip() for i in range(self.option_count)]

    def clean(self):
        data = super().clean()
        if self.too_many_options:
            self.add_error(None, forms.ValidationError(gettext("Options: at most %(n)s.") % {"n": MAX_OPTIONS},
                                                       code="max_length"))
        for problem in option_checks(self.options(), data.get("answer_index")):
            self.add_error(None, problem.message)
        return data

    def draft_content(self, *, default_answer_index: int) -> dict:
        """The text as typed (unfinished is fine: a draft), for autosaving; call after is_valid()."""
        answer_index = self.cleaned_data.get("answer_index")
        return {"context": self.data.get("context", ""), "question": self.data.get("question", ""),
                "options": [self.data.get(f"option_{i}", "") for i in range(self.option_count)],
                "answer_index": default_answer_index if answer_index is None else answer_index}

    def changes(self) -> dict:
        return {"context": self.cleaned_data["context"], "question": self.cleaned_data["question"].strip(),
                "options": self.options(), "answer_index": self.cleaned_data["answer_index"]}


#: The parts of a clue graph the editor does not show, carried through the page as JSON (hidden field `meta`).
GRAPH_META_KEYS = ("evidence_header", "reasoning_header", "evidence_steps", "evidence_notes", "reasoning_notes",
                   "clue_prefix", "step_prefix")


def _valid_meta(meta) -> bool:
    """The editor's hidden state: headers (text or null), notes (texts), combined evidence steps ([[inputs], output])."""
    if not isinstance(meta, dict):
        return False
    texts = lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)  # noqa: E731
    return (all(isinstance(meta.get(k), (str, type(None)))
                for k in ("evidence_header", "reasoning_header", "clue_prefix", "step_prefix"))
            and all(texts(meta.get(k, [])) for k in ("evidence_notes", "reasoning_notes"))
            and isinstance(meta.get("evidence_steps", []), list)
            and all(isinstance(s, list) and len(s) == 2 and texts(s[0]) and isinstance(s[1], str)
                    for s in meta.get("evidence_steps", [])))


class ClueGraphForm(NamedErrorsMixin, forms.Form):
    """The clue-graph editor's rows (repeated fields in the POST) as an EditableGraph, with sizes checked.

    `graph` is built even when there are errors, so that the page can show the
    annotator's own text again beside the error.
    """

    base_version = version_field()
    note = forms.CharField(required=False, max_length=MAX_NOTE, label="Note")
    meta = forms.CharField(required=False)

    def clean(self):
        data = super().clean()
        post = self.data
        try:
            meta = json.loads(post.get("meta") or "{}")
        except ValueError:
            meta = None
        if not _valid_meta(meta):
            self.add_error("meta", gettext("The editor's hidden state is damaged: reload the page."))
            meta = {}
        texts, implications = post.getlist("clue_text"), post.getlist("clue_implication")
        outputs, headers = post.getlist("step_output"), post.getlist("step_header")
        if len(texts) != len(implications):
            self.add_error(None, gettext("Every clue needs a text and an implication field."))
        if len(texts) > MAX_GRAPH_ROWS or len(outputs) > MAX_GRAPH_ROWS:
            self.add_error(None, forms.ValidationError(gettext("At most %(n)s clues and %(n)s steps.") % {"n": MAX_GRAPH_ROWS},
                                                       code="max_length"))
        for n, (text, implication) in enumerate(zip(texts, implications), 1):
            self._check_length(gettext("Clue %(n)s") % {"n": n}, text)
            self._check_length(gettext("Implication of clue %(n)s") % {"n": n}, implication)
        steps = []
        for i, output in enumerate(outputs[:MAX_GRAPH_ROWS]):
            inputs = [x for x in post.getlist(f"step_{i}_inputs") if x.strip()]
            extra = [x.strip() for x in post.get(f"step_{i}_extra", "").split(" + ") if x.strip()]
            for text in [*inputs, *extra]:
                self._check_length(gettext("Input of step S%(n)s") % {"n": i + 1}, text)
            self._check_length(gettext("Conclusion of step S%(n)s") % {"n": i + 1}, output)
            steps.append(EditableStep(inputs + extra, output, (headers[i] if i < len(headers) else "") or None))
        self.graph = replace(EditableGraph.from_data({k: v for k, v in meta.items() if k in GRAPH_META_KEYS}), clues=list(zip(texts, implications))[:MAX_GRAPH_ROWS],
                             steps=steps)
        return data

    def _check_length(self, what: str, text: str) -> None:
        if len(text) > MAX_GRAPH_TEXT:
            self.add_error(None, forms.ValidationError(
                gettext("%(what)s: at most %(n)s characters (it has %(length)s).")
                % {"what": what, "n": MAX_GRAPH_TEXT, "length": len(text)}, code="max_length"))


class ReviewForm(NamedErrorsMixin, forms.Form):
    action = forms.ChoiceField(choices=ReviewAction.choices, widget=forms.RadioSelect)
    send_back_to = forms.ChoiceField(choices=[("", "—")] + [(s.value, s.label) for s in Stage.send_back_targets()],
                                     required=False)
    comment = forms.CharField(required=False, max_length=MAX_COMMENT, widget=forms.Textarea(attrs={"rows": 3}))
    item_version = version_field(widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        if data.get("action") == ReviewAction.SEND_BACK:
            if not data.get("send_back_to"):
                self.add_error("send_back_to", gettext("Choose the stage to send the item back to."))
            if not (data.get("comment") or "").strip():
                self.add_error("comment", gettext("Say what needs fixing."))
        return data


class AdjudicationForm(NamedErrorsMixin, forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices, widget=forms.RadioSelect)
    comment = forms.CharField(required=False, max_length=MAX_COMMENT, widget=forms.Textarea(attrs={"rows": 2}))


class RevertForm(forms.Form):
    revision = version_field()
    base_version = version_field()


class EnterWorkflowForm(forms.Form):
    """Which imported items to queue for verification (a split, "*" for every split, and/or a source), confirmed."""

    EVERY_SPLIT = "*"
    split = forms.CharField(required=False, max_length=40)
    source = forms.CharField(required=False, max_length=100)
    confirm = forms.BooleanField(required=False)

    def clean(self):
        data = super().clean()
        if not data.get("split") and not data.get("source"):
            raise forms.ValidationError(gettext("Choose the split (or every split) or the source of the items to queue."))
        return data

    def scope(self) -> dict:
        """The items_enter_workflow keywords for the choice."""
        split = self.cleaned_data["split"]
        return {"split": None if split in ("", self.EVERY_SPLIT) else split,
                "source": self.cleaned_data["source"] or None, "every_split": split == self.EVERY_SPLIT}


CRITERIA_KEYS = {name: str(i + 1) for i, name in enumerate(CRITERIA)}
