"""What a participant sees of an item, and validation of what they send back: pure Python, no Django.

Only context, question and options ever leave the server for a participant: never the
answer index, the evidence or the reasoning.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.translations import is_out_of_date
from foundation.words import gettext
from studies.errors import AnswerInvalid, DraftStale

#: The fields of an item a participant's page reads (the id, then what is shown: ShownItem's source, and the content
#: version it is, which the question's lease records).
SHOWN_ITEM_FIELDS = ("id", "context", "question", "options", "translations", "content_version")

MAX_HIGHLIGHTS = 40
MAX_HIGHLIGHTS_CHARS = 100_000  # the raw JSON of one answer's highlights (a story is a few thousand characters)


@dataclass(frozen=True)
class ShownItem:
    context: str
    question: str
    options: tuple[str, ...]
    language: str = ""   # the language actually shown: "" = the original, also when a translation is incomplete


def translation_of(translations: Mapping | None, language: str, n_options: int) -> Mapping | None:
    """An item's complete translation into `language` (context, question and every option), else None; None too when
    the original changed under it (annotation.translations: never shown, scored against a reordered original)."""
    translated = (translations or {}).get(language) if language and isinstance(translations, Mapping) else None
    if (
        isinstance(translated, Mapping) and not is_out_of_date(translated)
        and translated.get("context") and translated.get("question")
        and isinstance(translated.get("options"), list) and len(translated["options"]) == n_options
        and all(isinstance(o, str) and o.strip() for o in translated["options"])
    ):
        return translated
    return None


def is_translated(translations: Mapping | None, language: str, n_options: int) -> bool:
    """Whether an item can be shown in `language`: the original always, a translation when complete."""
    return not language or translation_of(translations, language, n_options) is not None


def shown_item(*, context: str, question: str, options: Sequence[str], translations: Mapping | None,
               language: str) -> ShownItem:
    """The item in the study's language: the translation when complete, else the original; its texts as a browser
    reads them (`as_shown`), so that highlight offsets counted on the page are offsets in `context`."""
    translated = translation_of(translations, language, len(options))
    if translated is not None:
        return ShownItem(as_shown(translated["context"]), as_shown(translated["question"]),
                         tuple(as_shown(o) for o in translated["options"]), language)
    return ShownItem(as_shown(context), as_shown(question), tuple(as_shown(o) for o in options))


def as_shown(text: str) -> str:
    """A text as the participant's browser holds it: HTML parsing turns every CRLF and lone CR into LF (a context
    written in a form's textarea keeps its CRLFs), so the page's offsets count one character per line break.

    Highlight offsets are code points of this text (Python's str): the page counts UTF-16 units, and
    studies/static/studies/question.js converts them (a character outside the BMP is two units, one code point)."""
    if isinstance(text, str) and "\r" in text:
        return text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def parse_highlights(raw: str | None) -> Any:
    """The highlights field as sent by the page (JSON); raise AnswerInvalid when it is oversized or not JSON."""
    if not raw:
        return []
    if len(raw) > MAX_HIGHLIGHTS_CHARS:
        raise AnswerInvalid({"highlights": gettext("Highlights are limited to %(n)s characters.", n=MAX_HIGHLIGHTS_CHARS)})
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # deeply nested JSON raises RecursionError
        raise AnswerInvalid({"highlights": gettext("Highlights must be a JSON list.")}) from None


def parse_revision(raw: Any) -> int | None:
    """The draft revision a save replaces, as sent by the page: None when not sent (the save is unconditional),
    else a whole number >= 0; raise AnswerInvalid naming the field otherwise."""
    if raw is None or raw == "":
        return None
    revision = _as_int(raw)
    if revision is None or revision < 0:
        raise AnswerInvalid({"revision": gettext("The draft revision must be a whole number, 0 or more.")})
    return revision


def draft_save_wanted(*, revision: Any, current: int, stored: Callable[[], list[dict]], spans: list[dict]) -> bool:
    """Whether a draft save naming `revision` (as the page sent it) writes `spans` over the draft stored at revision
    `current`, whose highlights `stored()` gives. Saves arrive in any order, and an older one must never overwrite
    a newer draft: another revision means another save came first, DraftStale (412, with the stored draft), unless
    the stored highlights are the ones sent (a save run again after its commit, another tab showing the same):
    False, nothing to write. No revision: the save is unconditional. A malformed one: AnswerInvalid."""
    expected = parse_revision(revision)
    if expected is None or expected == current:
        return True
    highlights = stored()
    if highlights == spans:
        return False
    raise DraftStale(gettext("Your highlights were saved from elsewhere meanwhile."), revision=current,
                     highlights=highlights)


def clean_answer(*, context: str, n_options: int, chosen_option: Any, confidence: Any,
                 highlights: Any) -> tuple[int, int | None, list[dict]]:
    """Validate an answer against the shown item; return (option, confidence, highlights) or raise AnswerInvalid."""
    errors: dict[str, str] = {}
    option = _as_int(chosen_option)
    if option is None or not 0 <= option < n_options:
        errors["chosen_option"] = gettext("Choose one of the options.")
    conf = None
    if confidence not in (None, ""):
        conf = _as_int(confidence)
        if conf is None or not 1 <= conf <= 5:
            errors["confidence"] = gettext("Confidence must be between 1 and 5.")
    spans: list[dict] = []
    try:
        spans = clean_highlights(context=context, highlights=highlights)
    except AnswerInvalid as invalid:
        errors.update(invalid.messages)
    if errors:
        raise AnswerInvalid(errors)
    return option, conf, spans


def clean_highlights(*, context: str, highlights: Any) -> list[dict]:
    """Validate highlighted passages against the shown context: at most MAX_HIGHLIGHTS of them, each
    {"start", "end", "text"} with 0 <= start < end <= len(context) and context[start:end] == text.

    Returns them sorted by position without repeats; raises AnswerInvalid (field "highlights"). Used for
    answers and for drafts alike, so a draft that is saved is a draft that can be submitted.
    """
    if highlights in (None, ""):
        highlights = []
    if not isinstance(highlights, list) or len(highlights) > MAX_HIGHLIGHTS:
        raise AnswerInvalid({"highlights": gettext("Highlights must be a list of at most %(n)s passages.", n=MAX_HIGHLIGHTS)})
    spans: list[dict] = []
    seen = set()
    for h in highlights:
        if not isinstance(h, Mapping):
            raise AnswerInvalid({"highlights": gettext("Each highlight needs start, end and text.")})
        start, end, text = _as_int(h.get("start")), _as_int(h.get("end")), h.get("text")
        if start is None or end is None or not isinstance(text, str):
            raise AnswerInvalid({"highlights": gettext("Each highlight needs start, end and text.")})
        if not 0 <= start < end <= len(context):
            raise AnswerInvalid({"highlights": gettext("A highlight lies outside the context.")})
        if context[start:end] != text:
            raise AnswerInvalid({"highlights": gettext("A highlight does not match the context.")})
        if (start, end) not in seen:
            seen.add((start, end))
            spans.append({"start": start, "end": end, "text": text})
    spans.sort(key=lambda s: (s["start"], s["end"]))
    return spans


def matching_highlights(*, context: str, highlights: Any) -> list[dict]:
    """The stored highlights that still fit `context` (a draft made in another language of the item does not):
    each kept as it is when it matches, the others left out. Never raises."""
    if not isinstance(highlights, list):
        return []
    kept = []
    for h in highlights[:MAX_HIGHLIGHTS]:
        try:
            kept.extend(clean_highlights(context=context, highlights=[h]))
        except AnswerInvalid:
            continue
    return sorted({(s["start"], s["end"]): s for s in kept}.values(), key=lambda s: (s["start"], s["end"]))


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INT_RE.fullmatch(value):  # ASCII digits only: int() refuses "²"
        return int(value)
    return None


_INT_RE = re.compile(r"\s*-?[0-9]{1,9}\s*")
