"""Writes for studies, one transaction each, by sub-domain: `setup` (a study and its item pool),
`attempts` (joining, the hand-out of participant leases, dropout and time), `responses`
(the current question, accepting or refusing an answer) and `reasking` (items edited mid-study asked again). Refusals are `studies.errors`.
"""
from studies.services.attempts import (
    attempt_expire,
    attempt_extend,
    attempt_return,
    attempt_screen_out,
    attempt_screening_answer,
    attempt_set_language,
    attempt_start,
    attempts_sweep,
    study_join,
)
from studies.services.reasking import Reasked, study_reask_changed_items
from studies.services.responses import (
    USE_DRAFT,
    Draft,
    Question,
    Submitted,
    attempt_question,
    draft_of,
    highlight_draft,
    highlight_draft_save,
    practice_check,
    question_open,
    response_submit,
    shown_item_of,
)
from studies.services.setup import (
    pool_items_resolve,
    sample_pool,
    study_create,
    study_exclude_untranslated,
    study_set_pool,
    study_update,
)

__all__ = [
    "USE_DRAFT", "Draft", "Question", "Submitted", "draft_of", "highlight_draft", "highlight_draft_save",
    "attempt_expire", "attempt_extend", "attempt_question", "attempt_return", "attempt_screen_out",
    "attempt_screening_answer", "attempt_set_language", "attempt_start",
    "attempts_sweep",
    "practice_check", "pool_items_resolve", "question_open", "response_submit", "sample_pool", "shown_item_of",
    "study_create", "study_exclude_untranslated", "study_join", "study_set_pool", "study_update",
    "Reasked", "study_reask_changed_items",
]
