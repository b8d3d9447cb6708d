"""Words shown to people from the pure packages (figures, statistics, prompting), translated by the Django side.

A pure module may not import Django, so it marks its words with `gettext_noop` (makemessages finds them) and
says them with `gettext`, which translates through whatever `set_translator` installed: Django's gettext, installed
by detectbench_web's AppConfig at start, so a figure drawn for a Chinese page reads in Chinese. Without a translator
(a script using a pure module alone) the words stay English.
"""
from __future__ import annotations

from collections.abc import Callable


def _as_written(text: str) -> str:
    return text


def _as_written_plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


_translate: Callable[[str], str] = _as_written
_translate_plural: Callable[[str, str, int], str] = _as_written_plural


def set_translator(translate: Callable[[str], str], translate_plural: Callable[[str, str, int], str]) -> None:
    global _translate, _translate_plural
    _translate, _translate_plural = translate, translate_plural


def gettext_noop(text: str) -> str:
    """Marks a word for the catalog without translating it (said later with `gettext`)."""
    return text


def gettext(text: str, /, **values) -> str:
    """`text` in the active language, its %(name)s placeholders filled from `values` (named gettext so that
    makemessages finds the literal words)."""
    translated = _translate(text)
    return translated % values if values else translated


def ngettext(singular: str, plural: str, n: int, /, **values) -> str:
    """The form for `n` in the active language, its placeholders filled from `values`."""
    translated = _translate_plural(singular, plural, n)
    return translated % values if values else translated
