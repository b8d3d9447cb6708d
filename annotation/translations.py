"""An item's translations follow its original text: pure Python, no Django.

A translation (``translations[language]``: context, question and options) is made from the original's context,
question and options, in the options' order: the answer index is shared. An edit of any of those three that does not
bring its own translations leaves them out of date: a participant shown the old Chinese options under a reordered
original was scored against the wrong option. Such an edit marks each translation ``out_of_date`` (the fields of the
original that changed, e.g. "options") in the same revision, so that it is versioned with the content (a revert of
the edit brings the translation back as it was; so does a later edit or import that restores the original's text).
An out-of-date translation is never shown (studies.content), a study counts it as missing, and Data quality lists
it; a researcher brings it up to date in the admin (the corrected translation, without the mark)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

#: The original's fields a translation mirrors.
MIRRORED_FIELDS = ("context", "question", "options")
#: The key of a translation out of date: the original's fields changed since it was made.
OUT_OF_DATE = "out_of_date"
#: Beside the mark: what the translation was made from (a digest of each changed field's value before the change).
MADE_FROM = "made_from"


def is_out_of_date(translation: object) -> bool:
    return isinstance(translation, Mapping) and bool(translation.get(OUT_OF_DATE))


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:16]


def following_the_original(translations: object, before: Mapping, after: Mapping) -> dict | None:
    """The translations after the original's mirrored fields went from ``before`` to ``after``; None when nothing
    is to change (no mirrored field changed, no translation, nothing new to record).

    A translation up to date is marked out of date by the fields that changed, and records what it was made from (a
    digest of each such field's earlier value, ``made_from``). One already out of date records the earlier value of a
    field changed for the first time, and is up to date again (both keys gone) when every field it was made from is
    back to that value (an import or an edit restoring the original). A mark without its record (made before it was
    kept) stays until a researcher brings the translation up to date."""
    changed = [name for name in MIRRORED_FIELDS if before.get(name) != after.get(name)]
    if not changed or not isinstance(translations, Mapping):
        return None
    followed = {}
    for language, entry in translations.items():
        if not isinstance(entry, Mapping) or (is_out_of_date(entry) and not isinstance(entry.get(MADE_FROM), Mapping)):
            followed[language] = entry
            continue
        made_from = dict(entry.get(MADE_FROM) or {}) if is_out_of_date(entry) else {}
        for name in changed:
            made_from.setdefault(name, _digest(before.get(name)))
        differs = [name for name in MIRRORED_FIELDS if name in made_from and _digest(after.get(name)) != made_from[name]]
        entry = {key: value for key, value in entry.items() if key not in (OUT_OF_DATE, MADE_FROM)}
        if differs:
            entry.update({OUT_OF_DATE: ", ".join(differs), MADE_FROM: {name: made_from[name] for name in differs}})
        followed[language] = entry
    return followed if followed != dict(translations) else None
