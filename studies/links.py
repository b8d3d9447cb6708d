"""The links a participant arrives by and leaves by: pure Python, no Django.

- Arriving: a recruitment platform fills the ids into the study link (Prolific: ``PROLIFIC_PID={{%PROLIFIC_PID%}}``).
  A link whose placeholder was never filled (the researcher tried the link as it stands, or pasted it into
  another platform) carries the placeholder itself as the id; such an id is refused, naming the field.
- Leaving: a finished participant goes back to the platform with the completion code. Prolific documents its
  completion link as ``https://app.prolific.com/submissions/complete?cc=CODE``.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: The ids a platform fills into the study link, and what each names for the participant.
EXTERNAL_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete"
PROLIFIC_HOSTS = ("prolific.com", "prolific.co", "prolific.ac")

# {{%PROLIFIC_PID%}}, %PROLIFIC_PID%, {{PROLIFIC_PID}}, {PROLIFIC_PID}, [PROLIFIC_PID], $PROLIFIC_PID, ${SESSION_ID},
# <PROLIFIC_PID> and the bare name: the forms of a placeholder that nobody filled.
_PLACEHOLDER = re.compile(
    r"\{\{|\}\}|%[A-Za-z_]{2,}%|\$\{?[A-Za-z_]{2,}\}?|"
    r"^[\[{<]?\s*(?:PROLIFIC_PID|STUDY_ID|SESSION_ID)\s*[\]}>]?$",
    re.IGNORECASE,
)


def unfilled_placeholder(value: str) -> bool:
    """Whether an id from the study link is a placeholder that the recruitment platform did not fill."""
    return bool(value) and bool(_PLACEHOLDER.search(value.strip()))


def unfilled_fields(values: dict[str, str]) -> list[str]:
    """The names of the link's ids (in EXTERNAL_PARAMS order) that carry an unfilled placeholder."""
    return [name for name in EXTERNAL_PARAMS if unfilled_placeholder(values.get(name) or "")]


def is_prolific_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return any(host == h or host.endswith("." + h) for h in PROLIFIC_HOSTS)


def completion_link(*, completion_url: str, code: str, from_prolific: bool, finished: bool = True) -> str:
    """Where the end page sends a participant back to the platform ("" = nowhere).

    - The study's own completion URL: as it is for a finished attempt; a Prolific one carries the code shown
      (its ``cc`` set to it, so the time-out code goes to Prolific too).
    - No completion URL, a participant who came from Prolific and a code to enter: Prolific's completion link
      for that code.
    - A non-Prolific completion URL is not offered after a time-out (it would report the study as completed).
    """
    if completion_url:
        if is_prolific_url(completion_url):
            return with_query(completion_url, cc=code) if code else (completion_url if finished else "")
        return completion_url if finished else ""
    if from_prolific and code:
        return f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"
    return ""


def with_query(url: str, **params: str) -> str:
    """`url` with the given query parameters set (others kept, in order)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query.extend(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))
