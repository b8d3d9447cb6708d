"""An item's translations follow its original text: pure Python, no Django.

A translation (``translations[language]``: context, question and options) is made from the original's context,
question and options, in the options' order: the answer index is shared. An edit of any of those three that does not
bring its own translations leaves them out of date: a participant shown the old Chinese options under a reordered
original was scored against the wrong option. Such an edit marks each translation ``out_of_date`` (the fields of the
original that changed, e.g. "options") in the same revision, so that it is versioned with the content (a revert of
the edit brings the translation back as it was). An out-of-date translation is never shown (studies.content), a study
counts it as missing, and Data quality lists it; a researcher brings it up to date in the admin (the corrected
translation, without the mark)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

#: The original's fields a translation mirrors.
MIRRORED_FIELDS = ("context", "question", "options")
#: The key of a translation out of date: the original's fields changed since it was made.
OUT_OF_DATE = "out_of_date"


def is_out_of_date(translation: object) -> bool:
    return isinstance(translation, Mapping) and bool(translation.get(OUT_OF_DATE))


def marked_out_of_date(translations: object, changed: Iterable[str]) -> dict | None:
    """The translations with those not yet marked marked out of date by a change of the original's ``changed``
    fields; None when nothing is to be marked (no mirrored field changed, no translation)."""
    fields = [name for name in MIRRORED_FIELDS if name in set(changed)]
    if not fields or not isinstance(translations, Mapping):
        return None
    marked = {language: ({**entry, OUT_OF_DATE: ", ".join(fields)}
                         if isinstance(entry, Mapping) and not is_out_of_date(entry) else entry)
              for language, entry in translations.items()}
    return marked if marked != dict(translations) else None

