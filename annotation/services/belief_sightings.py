"""Who was shown which label's judge: the record that decides whether a review can be blind.

A review is blind only when its reviewer never saw the label's judge (its label, belief, rationale). Whether the
page hides the judge *now* (`selectors.belief.judge_hidden`) is not enough: a queue turned blind, or asking more
reviewers per label, after reviewing began hides again labels that people saw while it was sighted (or once the
label had its reviews). Every annotator page and API answer that shows a judge records it here, for the person it
was shown to (`belief_sightings_record`), and a review is recorded blind only without such a record
(`services.belief_review`). Researchers read every judge on their own pages (the trust page, the exports, the
label list API, the run and judge pages): their reviews are never recorded blind.
"""
from __future__ import annotations

from collections.abc import Iterable

from annotation.models import BeliefLabel, BeliefSighting
from annotation.selectors.belief import ShownLabel
from foundation.roles import is_researcher


def belief_sightings_record(*, user, shown: Iterable[ShownLabel | None], via: str) -> None:
    """Record that `user` is being shown the labels of `shown` whose judge is not hidden (`selectors.belief.
    shown_label`: what a page or API answer shows; None entries and hidden judges: nothing shown). The first
    showing of each label to a person is kept."""
    ids = sorted({label.pk for label in shown if label is not None and label.judge is not None})
    if not ids or not getattr(user, "is_authenticated", False):
        return
    BeliefSighting.objects.bulk_create([BeliefSighting(label_id=pk, user_id=user.pk, via=via[:40]) for pk in ids],
                                       ignore_conflicts=True)


def judge_seen(label: BeliefLabel, *, user) -> bool:
    """Whether `user` may have seen the judge of `label` before: it was shown to them, or they read the full record
    (a researcher)."""
    return is_researcher(user) or BeliefSighting.objects.filter(label_id=label.pk, user_id=user.pk).exists()
