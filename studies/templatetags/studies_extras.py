from django import template
from django.utils.translation import ngettext

register = template.Library()


@register.filter
def duration_hms(seconds) -> str:
    """3725 -> '1:02:05', 65 -> '1:05'."""
    try:
        total = max(0, int(seconds))
    except (TypeError, ValueError):
        return ""
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def percent(value, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.{int(digits)}f}%"


@register.filter
def num(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{int(digits)}f}"


@register.filter
def duration_words(seconds) -> str:
    """A time limit as people say it: 5400 -> '1 hour 30 minutes', 45 -> '45 seconds' (translated)."""
    try:
        total = max(0, int(seconds))
    except (TypeError, ValueError):
        return ""
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(ngettext("%(n)d hour", "%(n)d hours", hours) % {"n": hours})
    if minutes:
        parts.append(ngettext("%(n)d minute", "%(n)d minutes", minutes) % {"n": minutes})
    if secs or not parts:
        parts.append(ngettext("%(n)d second", "%(n)d seconds", secs) % {"n": secs})
    return " ".join(parts)


@register.filter
def option_number(index) -> str:
    """A 0-based option index as people count options: 0 -> '1'."""
    try:
        return str(int(index) + 1)
    except (TypeError, ValueError):
        return "–"


@register.filter
def option_numbers(indexes) -> str:
    """0-based option indexes as people count them: [0, 2] -> '1, 3'."""
    return ", ".join(option_number(i) for i in indexes or [])
