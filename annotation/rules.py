"""The annotation rules of the paper (Piecing Together Clues, appendix B, Table 7), as the screens that cite
them show them: the rule's words in the paper, then what it asks of the annotator on that screen.

The verification criteria 1.1-1.5 are `models.Criterion` (the verification screen lists them as its choices).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.models import Criterion, Stage


@dataclass(frozen=True)
class Rule:
    number: str
    text: str | Promise  # the paper's words
    practice: str | Promise = ""  # what it asks here


RULES: dict[str, tuple[Rule, ...]] = {
    Stage.VERIFICATION: tuple(Rule(label.split(" ", 1)[0], label.split(" ", 1)[1]) for label in Criterion.labels),
    Stage.REWRITE: (
        Rule("2.1", _("Standardize the expression."),
             _("Plain, consistent wording: fix spelling and grammar without changing the story.")),
        Rule("2.2", _("Rewrite a decent answer to the question."),
             _("The correct option answers the question fully and is supported by the context.")),
        Rule("2.3", _("Separate “Question” and “Context”."),
             _("The story and its facts stay in the context; the question only asks.")),
        Rule("2.4", _("Write decent and confusing “Options” of the question."),
             _("Plausible distractors, all distinct, exactly one correct (checked on the right, and on save).")),
    ),
    Stage.CLUE_GRAPH: (
        Rule("3.1", _("Regenerate or rewrite if the “Key Information of Context” cannot exactly match the text in "
                      "“Context”."),
             _("Each clue is words of the context, verbatim: see Anchoring, or pick the words in the context.")),
        Rule("3.2", _("Regenerate or rewrite if the connection or reasoning is redundant."),
             _("No repeated steps, no step that derives nothing new (the checks name them).")),
        Rule("3.3", _("Delete the question or rewrite it if important reasoning processes or connections are "
                      "lacking in the clue graph."),
             _("The steps lead from the clues to the answer; the last conclusion names it.")),
    ),
}


def stage_rules(stage: str) -> tuple[Rule, ...]:
    """The rules of Table 7 for the stage (none for review: it applies all of them)."""
    return RULES.get(stage, ())


def rule_range(stage: str) -> str:
    """ "2.1–2.4": the first and last rule of the stage, as a page cites them."""
    rules = stage_rules(stage)
    return f"{rules[0].number}–{rules[-1].number}" if rules else ""
