from django import template

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
