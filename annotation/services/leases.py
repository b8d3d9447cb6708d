"""Annotator leases: the queue of each stage, a slot per annotator, expiry and release."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.errors import ItemNotFound, NoSlot
from annotation.models import (
    CONTENT_FIELDS,
    Adjudication,
    AdjudicationStatus,
    AnnotatorLease,
    AnnotatorLeaseStatus,
    Item,
    ItemRevision,
    ItemStatus,
    Stage,
    StageConfig,
)
from annotation.services.items import item_update
from foundation.errors import Invalid
from foundation.words import gettext, ngettext


def stage_config(stage: str) -> StageConfig:
    config = StageConfig.objects.filter(stage=stage).first()
    return config or StageConfig(stage=stage)


def live_leases(item_id: int, stage: str, now):
    """Leases that hold a slot: submitted, or leased and not yet expired."""
    return AnnotatorLease.objects.filter(item_id=item_id, stage=stage).filter(
        Q(status=AnnotatorLeaseStatus.SUBMITTED) | Q(status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now))


def _built_the_clue_graph(item, user) -> tuple:
    """Querysets (lease, revision) naming `user` a builder of the clue graph of `item` (an id or an OuterRef): who
    finished its stage, and who wrote any of its clue-graph revisions (an edit there, an accepted judge's draft),
    lease or no lease. A builder does not review it."""
    finished = AnnotatorLease.objects.filter(
        item=item, stage=Stage.CLUE_GRAPH, annotator=user, status=AnnotatorLeaseStatus.SUBMITTED)
    # Any revision of theirs in the stage but a move of its status (finishing it) is an edit of the clue graph. An
    # exact JSON match, not containment (`changed_fields__contains`), which make run's SQLite does not have.
    wrote = ItemRevision.objects.filter(item=item, stage=Stage.CLUE_GRAPH, author=user).exclude(
        changed_fields=["status"])
    return finished, wrote


def _may_take(item_id: int, stage: str, user) -> bool:
    """A reviewer must be someone other than the people who built the item's clue graph."""
    if stage != Stage.REVIEW:
        return True
    return not any(query.exists() for query in _built_the_clue_graph(item_id, user))


def take_slot(*, item: Item, stage: str, user, now, config: StageConfig) -> AnnotatorLease:
    """The user's live lease on a locked item, or a new lease if the stage still has a free slot."""
    # An expired lease no longer holds a slot (someone else may have it now): only a live one is resumed.
    mine = live_leases(item.pk, stage, now).filter(annotator=user).first()
    if mine is not None:
        if mine.status == AnnotatorLeaseStatus.LEASED:
            mine.expires_at = now + timedelta(minutes=config.lease_minutes)
            mine.save(update_fields=["expires_at"])
        return mine
    _refuse_a_new_slot(item=item, stage=stage, user=user, now=now, config=config)
    _release_stale(user=user, stage=stage, now=now)
    held = _open_lease(user=user, stage=stage, now=now)
    if held is not None:
        # The database holds one open lease per user and stage (annotator_lease_one_open_per_stage).
        raise NoSlot(gettext("You hold %(item)s in %(stage)s: submit it or skip it first.", item=held.item,
                              stage=Stage(stage).label))
    return AnnotatorLease.objects.create(item=item, stage=stage, annotator=user, leased_at=now,
                                         expires_at=now + timedelta(minutes=config.lease_minutes))


def _refuse_a_new_slot(*, item: Item, stage: str, user, now, config: StageConfig) -> None:
    """NoSlot when the stage has no slot for `user` on `item` now (the item elsewhere, a reviewer who built the clue
    graph, an open adjudication, every slot held)."""
    if item.status != stage:
        raise NoSlot(gettext("%(item)s is in %(status)s, not in %(stage)s.", item=item,
                              status=str(item.get_status_display()).lower(), stage=str(Stage(stage).label).lower()))
    if not _may_take(item.pk, stage, user):
        raise NoSlot(gettext("A reviewer must not review an item whose clue graph they built."))
    if Adjudication.objects.filter(item=item, stage=stage, status=AdjudicationStatus.OPEN).exists():
        raise NoSlot(gettext("%(item)s waits for adjudication.", item=item))
    if live_leases(item.pk, stage, now).count() >= config.annotators_required:
        raise NoSlot(ngettext("%(item)s already has %(n)s annotator in %(stage)s.",
                              "%(item)s already has %(n)s annotators in %(stage)s.", config.annotators_required,
                              item=item, n=config.annotators_required, stage=Stage(stage).label))


def slot_refusal(*, item: Item, stage: str, user, now=None) -> str:
    """Why `user` could not work on `item` in `stage` now ('' when they hold one of its slots or one is free): what
    an edit or a decision would be refused with, read without taking anything, so that a page says it before any
    typing (an annotator without a slot could type and autosave for nothing). '' too for an item not in the stage
    (its pages say that themselves)."""
    now = now or timezone.now()
    if item.status != stage or live_leases(item.pk, stage, now).filter(annotator=user).exists():
        return ""
    try:
        _refuse_a_new_slot(item=item, stage=stage, user=user, now=now, config=stage_config(stage))
    except NoSlot as refusal:
        return refusal.message
    return ""


def _open_lease(*, user, stage: str, now) -> AnnotatorLease | None:
    """The user's open lease in the stage (at most one: a database constraint), locked; only its own row."""
    return (AnnotatorLease.objects.select_for_update(of=("self",))
            .filter(annotator=user, stage=stage, status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now,
                    item__status=stage)
            .select_related("item").first())


def _release(leases) -> int:
    """The one change that gives leases back to the queue: the open ones among ``leases`` become released (their
    slot is free again); submitted ones are kept. Returns how many changed."""
    return leases.filter(status=AnnotatorLeaseStatus.LEASED).update(status=AnnotatorLeaseStatus.RELEASED)


def _release_stale(*, user, stage: str, now) -> int:
    """The user's open leases in the stage that hold nothing (expired, or the item left the stage) are released,
    so that they do not stand in the way of a new one."""
    return _release(AnnotatorLease.objects.filter(annotator=user, stage=stage)
                    .filter(Q(expires_at__lte=now) | ~Q(item__status=stage)))


@transaction.atomic
def items_enter_workflow(*, user, split: str | None = None, source: str | None = None,
                         item_ids: Iterable[int] | None = None, every_split: bool = False,
                         dry_run: bool = False) -> int:
    """Put imported items into the verification queue, each with a revision; returns how many moved.

    The items are chosen explicitly: a split, a source, a list of ids, or `every_split`
    (every imported item); a call that names none is refused, so an empty form can never
    queue every imported item. `dry_run` only counts the items that would move.
    """
    if not (split or source or item_ids is not None or every_split):
        raise Invalid(gettext("Choose the split (or every split) or the source of the imported items to queue."),
                      field="split", code="scope_required")
    items = Item.objects.filter(status=ItemStatus.IMPORTED)
    if split:
        items = items.filter(split=split)
    if source:
        items = items.filter(source=source)
    if item_ids is not None:
        items = items.filter(pk__in=list(item_ids))
    if dry_run:
        return items.count()
    items = items.select_for_update()
    moved = list(items.only("pk", "version", "content_version", *CONTENT_FIELDS).order_by("pk"))
    if not moved:
        return 0
    Item.objects.filter(pk__in=[item.pk for item in moved]).update(
        status=ItemStatus.VERIFICATION, version=F("version") + 1, updated_at=timezone.now())
    ItemRevision.objects.bulk_create([
        ItemRevision(item=item, number=item.version + 1, content_version=item.content_version, author=user, stage=ItemStatus.IMPORTED,
                     note="queued for verification", changed_fields=["status"], snapshot=item.content())
        for item in moved
    ], batch_size=500)
    return len(moved)


@transaction.atomic
def leases_expire(*, now=None) -> int:
    """Release every lease whose time is up (also done lazily by lease_next); idempotent."""
    now = now or timezone.now()
    return _release(AnnotatorLease.objects.filter(expires_at__lte=now))


def lease_next(*, user, stage: str, now=None) -> AnnotatorLease | None:
    """Hand the user the next item of a stage as a lease, or None when their queue is empty.

    A user who still holds a live lease in the stage gets it back (renewed). Otherwise
    candidates are locked with SELECT ... FOR UPDATE SKIP LOCKED OF the item only, so
    concurrent requests never wait for each other nor take the same item; the free
    slots are recounted after the lock, when every earlier lease on that item is
    visible. Every lock names its own table (`of=`): locking the rows a query only
    joins made a hand-out and a submit of the same user wait for each other (deadlock).
    Two concurrent requests of one user cannot both take an item: the database holds one
    open lease per user and stage, and the request that loses gets the winner's lease.
    """
    if stage not in Stage.values:
        raise Invalid(gettext("Unknown stage: %(stage)s.", stage=stage), field="stage")
    now = now or timezone.now()
    config = stage_config(stage)
    with transaction.atomic():
        mine = _renewed(_open_lease(user=user, stage=stage, now=now), now=now, config=config)
        if mine is not None:
            return mine
        candidates = _candidates(user=user, stage=stage, now=now, config=config)
        skipped: list[int] = []
        for _ in range(50):
            item = candidates.exclude(pk__in=skipped).select_for_update(skip_locked=True, of=("self",)).first()
            if item is None:
                return None
            try:
                with transaction.atomic():
                    return take_slot(item=item, stage=stage, user=user, now=now, config=config)
            except (IntegrityError, NoSlot) as refused:
                # Another request of this user may have taken an item meanwhile (one open lease per stage,
                # visible once it committed): that lease is the answer to this request too.
                held = _open_lease(user=user, stage=stage, now=now)
                if held is not None:
                    return _renewed(held, now=now, config=config)
                if isinstance(refused, NoSlot):
                    skipped.append(item.pk)
        return None


def _renewed(lease: AnnotatorLease | None, *, now, config: StageConfig) -> AnnotatorLease | None:
    if lease is not None:
        lease.expires_at = now + timedelta(minutes=config.lease_minutes)
        lease.save(update_fields=["expires_at"])
    return lease


def _candidates(*, user, stage: str, now, config: StageConfig):
    """Items of the stage the user may take, with a free slot, oldest first (not locked)."""
    live = AnnotatorLease.objects.filter(item=OuterRef("pk"), stage=stage).filter(
        Q(status=AnnotatorLeaseStatus.SUBMITTED) | Q(status=AnnotatorLeaseStatus.LEASED, expires_at__gt=now))
    live_count = live.order_by().values("item").annotate(n=Count("pk")).values("n")
    # An item this annotator skipped (gave back) before its time ran out is not handed back to them while that time
    # lasts: skipping moves on (the item stays where it is for everyone else). An expired lease is no skip.
    skipped = AnnotatorLease.objects.filter(item=OuterRef("pk"), stage=stage, annotator=user,
                                            status=AnnotatorLeaseStatus.RELEASED,
                                            expires_at__gt=now)
    candidates = (
        Item.objects.filter(status=stage)
        .exclude(Exists(live.filter(annotator=user)))
        .exclude(Exists(skipped))
        .exclude(Exists(Adjudication.objects.filter(item=OuterRef("pk"), stage=stage,
                                                    status=AdjudicationStatus.OPEN)))
        # Only items with a free slot: full ones must not crowd the free ones out of the 50 tries.
        .annotate(live_slots=Coalesce(Subquery(live_count), 0))
        .filter(live_slots__lt=config.annotators_required)
        .order_by("pk")
    )
    if stage == Stage.REVIEW:  # not to the clue graph's builders (`_may_take`)
        for query in _built_the_clue_graph(OuterRef("pk"), user):
            candidates = candidates.exclude(Exists(query))
    return candidates


@transaction.atomic
def lease_release(*, item_id: int, stage: str, user) -> int:
    """The user's open lease on an item in a stage goes back to the queue (they skip the item); 0 if none."""
    return _release(AnnotatorLease.objects.filter(item_id=item_id, stage=stage, annotator=user))


@transaction.atomic
def leases_release(*, lease_ids: Iterable[int]) -> int:
    """A researcher releases open leases (e.g. an annotator left, from the admin); submitted ones are kept."""
    return _release(AnnotatorLease.objects.filter(pk__in=list(lease_ids)))


@transaction.atomic
def stage_config_set(*, stage: str, annotators_required: int, lease_minutes: int) -> StageConfig:
    """Set how many annotators a stage needs (k) and how long its leases last."""
    if stage not in Stage.values:
        raise Invalid(gettext("Unknown stage: %(stage)s.", stage=stage), field="stage")
    if annotators_required < 1:
        raise Invalid(gettext("A stage needs at least one annotator."), field="annotators_required")
    if lease_minutes < 1:
        raise Invalid(gettext("A lease lasts at least one minute."), field="lease_minutes")
    config, _ = StageConfig.objects.update_or_create(
        stage=stage, defaults={"annotators_required": annotators_required, "lease_minutes": lease_minutes})
    return config


def _close_stage(*, item: Item, stage: str) -> None:
    """Leases still open in a stage the item leaves are released."""
    _release(AnnotatorLease.objects.filter(item=item, stage=stage))


def move_item(*, item: Item, stage: str, status: str, user, note: str) -> Item:
    _close_stage(item=item, stage=stage)
    return item_update(item_id=item.pk, base_version=item.version, changes={}, user=user, note=note, stage=stage,
                       status=status)


def mark_submitted(lease: AnnotatorLease, now) -> None:
    lease.status, lease.submitted_at = AnnotatorLeaseStatus.SUBMITTED, now
    lease.save(update_fields=["status", "submitted_at"])


def locked_item(item_id: int) -> Item:
    item = Item.objects.select_for_update().filter(pk=item_id).first()
    if item is None:
        raise ItemNotFound(gettext("No item %(id)s.", id=item_id))
    return item
