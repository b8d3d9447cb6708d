"""Reads for studies, one module per reader:

- `participants`: where the public link leads, the attempt a participant resumes, the completion counts;
- `monitor`: the researcher's list of studies, a study's attempts and the live monitor;
- `results`: a study's results (Table 3, items, kappa, KeyInfo, time, bonuses);
- `answers`: the accepted answers other apps read (`response_outcomes`, `response_rows`);
- `exports`: the exports (every answer, a screened-out attempt's marked);
- `item_states`: whether each answer's item is current, stale (the fields changed since) or deleted (rejected).

A screened-out attempt's answers are kept but counted nowhere: not in the results, the monitor's answered counts,
nor the answers the leaderboard and the one-scale fit read; the exports list them, marked. The accuracy figures count
current answers only, as the leaderboard's Humans row does; stale and deleted ones are counted apart and marked.

The names below are re-exported for callers that import them from the package."""
from __future__ import annotations

from studies.selectors.answers import ItemAnswers, response_outcomes, response_rows
from studies.selectors.exports import EXPORT_FIELDS, study_attempts_export, study_export, study_export_rows
from studies.selectors.monitor import MonitorRow, attempt_list, study_list, study_monitor
from studies.selectors.participants import (
    Entry,
    StudyEntry,
    attempt_by_token,
    attempt_counts,
    attempt_resumable,
    study_entry,
    study_has_room,
    study_public,
)
from studies.selectors.results import (
    NOT_COUNTED,
    ItemResult,
    ParticipantResult,
    StudyResults,
    study_results,
)

__all__ = [
    "EXPORT_FIELDS", "NOT_COUNTED", "Entry", "ItemAnswers", "ItemResult", "MonitorRow", "ParticipantResult",
    "StudyEntry", "StudyResults", "attempt_by_token", "attempt_counts", "attempt_list", "attempt_resumable",
    "response_outcomes", "response_rows", "study_attempts_export", "study_entry", "study_export",
    "study_export_rows", "study_has_room", "study_list", "study_monitor", "study_public", "study_results",
]
