"""Moved to tests/annotation/belief_support.py; kept for tests/evaluation/judge/test_judge_quality.py, which still
imports it from here (to go once that module imports tests.annotation.belief_support)."""
from tests.annotation.belief_support import free_text_row, record_free_text, screening_rows

__all__ = ["free_text_row", "record_free_text", "screening_rows"]
