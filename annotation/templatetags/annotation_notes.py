"""`{{ revision.note|shown_note }}`: a revision note in the reader's language (annotation.revision_notes)."""
from __future__ import annotations

from django import template

from annotation.revision_notes import shown_note as _shown_note

register = template.Library()


@register.filter
def shown_note(note: str) -> str:
    return _shown_note(note or "")
