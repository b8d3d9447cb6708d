"""The notes the app writes on an item's revisions, shown in the reader's language.

Notes are stored as written, in English ("review: sent back to rewrite: …", "verification: kept by ann1"): they are
stable text that code reads (`services.items.curated_since_import` looks for "imported from") and the API answers
with. The history and item pages show them through :func:`shown_note`, which knows every note the app writes,
translates it and fills in its values (a stage by its name in the reader's language). A note an annotator typed, and
any note it does not know, is shown as stored: old rows stay readable.
"""
from __future__ import annotations

import re

from django.utils.translation import get_language, gettext, gettext_noop

from annotation.models import Decision, Stage

#: (the stored note, as a pattern over the whole note; its wording in the catalog). Values named in the pattern
#: fill the wording's placeholders of the same name.
NOTES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(pattern, re.S), wording) for pattern, wording in (
    (r"queued for verification", gettext_noop("queued for verification")),
    (r"review: approved", gettext_noop("review: approved")),
    (r"review: sent back to (?P<stage>\w+): (?P<comment>.*)", gettext_noop("review: sent back to %(stage)s: %(comment)s")),
    (r"verification: kept by (?P<who>.+)", gettext_noop("verification: kept by %(who)s")),
    (r"verification: deleted by (?P<who>.+?) \((?P<criteria>[^()]*)\)",
     gettext_noop("verification: deleted by %(who)s (%(criteria)s)")),
    (r"adjudication: (?P<decision>keep|delete) \((?P<comment>.*)\)",
     gettext_noop("adjudication: %(decision)s (%(comment)s)")),
    (r"adjudication: (?P<decision>keep|delete)", gettext_noop("adjudication: %(decision)s")),
    (r"(?P<stage>verification|rewrite|clue_graph|review) done", gettext_noop("%(stage)s done")),
    (r"clue graph edited", gettext_noop("clue graph edited")),
    (r"rewritten", gettext_noop("rewritten")),
    (r"clue graph submitted via API", gettext_noop("clue graph submitted via API")),
    (r"edited in the admin", gettext_noop("edited in the admin")),
    (r"created in the admin", gettext_noop("created in the admin")),
    (r"created", gettext_noop("created")),
    (r"Chinese translation from sample_data", gettext_noop("Chinese translation from sample_data")),
    (r"imported from (?P<file>.+)", gettext_noop("imported from %(file)s")),
    (r"re-imported from (?P<file>.+?) over the app's edit \(revision (?P<n>\d+) by (?P<who>.+), content version "
     r"(?P<version>\d+)\)",
     gettext_noop("re-imported from %(file)s over the app's edit (revision %(n)s by %(who)s, content version "
                  "%(version)s)")),
    (r"re-imported from (?P<file>.+?) over the app's edit \(revision (?P<n>\d+), content version (?P<version>\d+)\)",
     gettext_noop("re-imported from %(file)s over the app's edit (revision %(n)s, content version %(version)s)")),
    (r"re-imported from (?P<file>.+)", gettext_noop("re-imported from %(file)s")),
    (r"reverted to revision (?P<n>\d+)", gettext_noop("reverted to revision %(n)s")),
    (r"clue-graph draft of the judge \((?P<producer>.+)\) accepted",
     gettext_noop("clue-graph draft of the judge (%(producer)s) accepted")),
    (r"clue-graph draft of the judge \((?P<producer>.+)\) edited",
     gettext_noop("clue-graph draft of the judge (%(producer)s) edited")),
    (r"clue-graph draft of the judge \((?P<producer>.+)\) discarded",
     gettext_noop("clue-graph draft of the judge (%(producer)s) discarded")),
))


def _value(name: str, value: str) -> str:
    if name == "stage" and value in Stage.values:
        return str(Stage(value).label).lower()
    if name == "decision" and value in Decision.values:
        return str(Decision(value).label).lower()
    return value


def shown_note(note: str) -> str:
    """`note` in the active language when the app wrote it; as stored otherwise (and for English readers, who read
    the notes as they were written)."""
    if not note or (get_language() or "en").startswith("en"):
        return note
    for pattern, wording in NOTES:
        match = pattern.fullmatch(note)
        if match:
            values = {name: _value(name, value) for name, value in match.groupdict().items()}
            return gettext(wording) % values if values else gettext(wording)
    return note
