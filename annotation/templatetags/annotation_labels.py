"""`{{ code|human }}`: the words a person reads for a code of the annotation app.

Issue kinds of the clue-graph checks, Table-7 criteria, decisions, item statuses and
stages, review actions: every code shown on a page goes through this filter, so a
page never shows `wrong_answer` or `fuzzy_clue`. An unknown code is shown as it is.
"""
from __future__ import annotations

from django import template
from django.utils.translation import gettext_lazy as _

from annotation.clue_graph.checks import IssueKind
from annotation.models import Criterion, Decision, ItemStatus, ReviewAction

register = template.Library()

#: A short label per kind of clue-graph issue (the message after it says which clue or step).
ISSUE_LABELS = {
    IssueKind.UNANCHORED_CLUE: _("Clue not found in the context"),
    IssueKind.FUZZY_CLUE: _("Clue only approximately in the context"),
    IssueKind.DANGLING_REFERENCE: _("Step input that refers to nothing"),
    IssueKind.REPEATED_STEP: _("Repeated step"),
    IssueKind.REDUNDANT_STEP: _("Step that derives nothing new"),
    IssueKind.UNUSED_CLUE: _("Clue that no step uses"),
    IssueKind.NO_CONCLUSION: _("No conclusion"),
    IssueKind.UNPARSED_LINE: _("Line that is neither a clue nor a step"),
    IssueKind.NO_ANSWER: _("Does not reach the answer"),
}

#: Warnings of the item checks (annotation.item_checks) shown beside the clue-graph checks.
CHECK_LABELS = {"broad_clue": _("Clue that covers most of the context")}

LABELS: dict[str, str] = {
    **{str(kind): label for kind, label in ISSUE_LABELS.items()}, **CHECK_LABELS,
    **dict(Criterion.choices), **dict(Decision.choices), **dict(ItemStatus.choices), **dict(ReviewAction.choices),
}


@register.filter
def human(code) -> str:
    """The label of a code (an issue kind, a criterion, a decision, a status or stage, a review action)."""
    return LABELS.get(str(code), code)
