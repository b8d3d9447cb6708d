"""The import page's form: the split is one of the splits the items already have, or a new one typed on purpose;
a file whose name names another split (``train.jsonl`` into ``test``) is imported only once that is confirmed."""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.forms import ItemImportForm as _ItemImportForm

#: The value of the split list's "a new split" entry (no split can be called so: split names have no spaces).
NEW_SPLIT = "new split"
#: Names that a file's name may use for a split, besides the splits the items have.
SPLIT_WORDS = ("train", "test", "dev", "val", "valid", "validation", "eval")
SPLIT_NAME = re.compile(r"^[\w.-]{1,40}$")


def split_named_by(file_name: str, *, known: Iterable[str] = ()) -> str | None:
    """The split a file's name names (``train.jsonl``, ``detectbench_dev_v2.jsonl``), or None: a word of its stem
    that is a usual split name or one the items have (case aside)."""
    names = {name.lower(): name for name in (*SPLIT_WORDS, *known) if name}
    stem = PurePath(file_name or "").name.split(".", 1)[0]
    for word in re.split(r"[^0-9A-Za-z]+", stem):
        if word.lower() in names:
            return names[word.lower()]
    return None


class SplitField(forms.ChoiceField):
    """A split of the list; a client other than the page may also name a split directly (as the command's
    --split does)."""

    def valid_value(self, value) -> bool:
        return super().valid_value(value) or bool(SPLIT_NAME.match(str(value or "")))


class ItemImportForm(_ItemImportForm):
    split = SplitField(label=_("Split"), choices=(),
                              help_text=_("One of the splits the items have, or a new one (type its name below)."))
    new_split = forms.CharField(label=_("New split"), required=False, max_length=40,
                                help_text=_("Only when “A new split…” is chosen above: its name, e.g. pilot."))
    split_confirmed = forms.BooleanField(required=False)

    field_order = ["file", "source", "split", "new_split", "split_confirmed", "dry_run", "skip_invalid", "curated"]

    def __init__(self, *args, splits: Iterable[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.splits = [s for s in splits if s]
        self.split_warning, self.warned_split = "", ""
        choices = [("", "—")] if self.splits else []
        self.fields["split"].choices = [*choices, *((s, s) for s in self.splits), (NEW_SPLIT, _("A new split…"))]
        if not self.splits:
            self.fields["split"].initial = NEW_SPLIT

    def clean(self):
        data = super().clean()
        split = data.get("split")
        if split == NEW_SPLIT:
            split = (data.get("new_split") or "").strip()
            if not split:
                self.add_error("new_split", gettext("Type the name of the new split."))
            elif not SPLIT_NAME.match(split):
                self.add_error("new_split", gettext("A split's name is letters, digits, ., - and _ (at most 40)."))
                split = ""
        data["split"] = split
        upload = data.get("file")
        if upload is not None and split:
            named = split_named_by(upload.name, known=self.splits)
            if named is not None and named.lower() != split.lower():
                self.warned_split = split
                self.split_warning = gettext(
                    "%(file)s names the split “%(named)s”, not “%(split)s”.") % {
                        "file": upload.name, "named": named, "split": split}
                if not data.get("split_confirmed") and not data.get("dry_run"):
                    self.add_error("split", self.split_warning + " " + gettext(
                        "Choose “%(named)s”, or tick “Import into %(split)s anyway” and choose the file again.")
                        % {"named": named, "split": split})
        return data
