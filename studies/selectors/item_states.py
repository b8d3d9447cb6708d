"""Whether a study's answers are still about their item as it is now, for the results, the exports and the monitor.

Each (item, content version) an answer, a time-out or a lease is about is in one of three states:

- *current*: the item's content is still the one the participant saw, and the item is not deleted;
- *stale*: the item's content changed since (the fields that changed, when and by whom come from annotation's
  `content_changes_since`, as the evaluation's pages name them);
- *deleted*: the item was rejected (deleted) since.

Only current answers count in the studies' accuracy figures, as in the leaderboard's Humans row: it reads
`studies.selectors.answers.response_outcomes` (answers and time-outs at the item's current content version, a
screened-out attempt's left out) and leaves the rejected items out of its tables. Stale and deleted answers are
kept, exported and counted apart."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import F, Q

from annotation.models import Item, ItemStatus
from annotation.selectors import content_changes_since
from studies.models import ParticipantLease, ParticipantLeaseStatus

CURRENT, STALE, DELETED = "current", "stale", "deleted"
STATES = (CURRENT, STALE, DELETED)


@dataclass(frozen=True)
class ItemState:
    """What an answer at ``version`` is about now: its state, the item's content version now, and (when the content
    changed since) the changes, oldest first: {revision, content_version, fields, at, by, note}."""

    state: str
    version: int | None
    current_version: int
    changes: tuple[dict, ...] = ()

    @property
    def stale(self) -> bool:
        """The item's content is no longer the one seen (also on a deleted item), as the evaluation's `stale`."""
        return self.version != self.current_version

    @property
    def changed_fields(self) -> list[str]:
        """The content fields changed since ``version``, each once, in the order they first changed."""
        return list(dict.fromkeys(name for change in self.changes for name in change["fields"]))


def item_states(pairs: Iterable[tuple[int, int | None]], *,
                items: Mapping[int, Item] | None = None) -> dict[tuple[int, int | None], ItemState]:
    """{(item id, content version): ItemState} for these pairs. The items come from ``items`` (loaded with their
    ``status`` and ``content_version``) or one query; one more query per (item, version) whose content changed
    since (annotation's `content_changes_since`). A version None (not known) is stale, with no changes named."""
    wanted = set(pairs)
    loaded = dict(items or {})
    missing = {item_id for item_id, _ in wanted} - loaded.keys()
    if missing:
        loaded.update((item.pk, item) for item in
                      Item.objects.filter(pk__in=missing).only("id", "status", "content_version"))
    states = {}
    for item_id, version in wanted:
        item = loaded.get(item_id)
        if item is None:
            continue
        changes = ()
        if version is not None and version != item.content_version:
            changes = tuple(content_changes_since(item=item, content_version=version))
        state = DELETED if item.status == ItemStatus.REJECTED else CURRENT if version == item.content_version \
            else STALE
        states[(item_id, version)] = ItemState(state=state, version=version, current_version=item.content_version,
                                               changes=changes)
    return states


def changed_answers(study_id: int):
    """The study's answered leases on content their item no longer has, still in their item's load (rejected items
    left out): what `study_reask_changed_items` gives back."""
    return (ParticipantLease.objects.filter(attempt__study_id=study_id, status=ParticipantLeaseStatus.ANSWERED,
                                            quota_given_back=False)
            .filter(~Q(response__item_version=F("item__content_version")))
            .exclude(item__status=ItemStatus.REJECTED))


def current_again_answers(study_id: int | None = None):
    """Answered leases whose place was given back but whose item has the content they answered again (an edit
    undone), rejected items left out; of one study, or of all."""
    leases = ParticipantLease.objects.filter(status=ParticipantLeaseStatus.ANSWERED, quota_given_back=True,
                                             response__item_version=F("item__content_version"))
    if study_id is not None:
        leases = leases.filter(attempt__study_id=study_id)
    return leases.exclude(item__status=ItemStatus.REJECTED)
