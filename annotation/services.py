"""Writes to the item store: import, export, and versioned edits."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import BinaryIO, Iterable, TextIO

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from . import clue_graph
from .dataformat import ParsedRecord, RecordError, parse_jsonl
from .item_facts import question_type, token_count, word_count
from .graph_editing import EditableGraph
from .models import (
    CONTENT_FIELDS, CRITERIA, NEXT_STATUS, Adjudication, AdjudicationStatus, Assignment, AssignmentStatus, Decision,
    Draft, Item, ItemRevision, ItemStatus, ReviewAction, ReviewDecision, Stage, StageConfig, VerificationDecision,
)


class ImportRejected(Exception):
    """The file has invalid lines and nothing was imported."""

    def __init__(self, errors: list[RecordError]):
        self.errors = errors
        shown = "\n".join(str(e) for e in errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} invalid line(s), nothing imported:\n{shown}{more}")


class StaleVersion(Exception):
    """An edit was based on an older version of the item than the one stored."""

    def __init__(self, item: Item, base_version: int):
        self.item = item
        self.base_version = base_version
        super().__init__(f"{item} is at version {item.version}, the edit started from version {base_version}")


@dataclass
class ImportReport:
    file: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    errors: list[RecordError] = field(default_factory=list)
    dry_run: bool = False

    def summary(self) -> str:
        prefix = "dry run: would have " if self.dry_run else ""
        return (
            f"{prefix}created {self.created}, updated {self.updated}, "
            f"unchanged {self.unchanged}, rejected {self.rejected}"
        )


def derived_facts(*, context: str, question: str, evidence: str, reasoning: str) -> dict:
    """The analysis fields stored beside an item's content."""
    graph = clue_graph.parse_clue_graph(evidence, reasoning)
    return {
        "question_type": question_type(question),
        "context_words": word_count(context),
        "context_tokens": token_count(context),
        "evidence_count": len(graph.clues),
        "reasoning_steps": len(graph.steps),
    }


def _content_from_record(record: ParsedRecord) -> dict:
    return {
        "context": record.context,
        "question": record.question,
        "options": record.options,
        "answer_index": record.answer_index,
        "evidence": record.evidence,
        "reasoning": record.reasoning,
        "extra": record.extra,
    }


@transaction.atomic
def item_import(
    *,
    stream: BinaryIO,
    file_name: str,
    source: str,
    split: str,
    user=None,
    dry_run: bool = False,
    skip_invalid: bool = False,
) -> ImportReport:
    """Import DetectBench JSONL: all or nothing (or skip invalid lines), upsert on (source, external id).

    A revision is written for every created item and for every item whose content changed;
    unchanged items are left alone, so re-importing a file is idempotent.
    """
    parsed = parse_jsonl(stream, file=file_name)
    report = ImportReport(file=file_name, errors=parsed.errors, dry_run=dry_run)
    bad_lines = {e.line for e in parsed.errors}
    report.rejected = len(bad_lines)
    if parsed.errors and not skip_invalid:
        raise ImportRejected(parsed.errors)

    existing = {
        item.external_id: item
        for item in Item.objects.select_for_update().filter(
            source=source, external_id__in=[r.external_id for r in parsed.records]
        )
    }
    to_create: list[Item] = []
    to_update: list[tuple[Item, list[str]]] = []
    for record in parsed.records:
        content = _content_from_record(record)
        facts = derived_facts(
            context=record.context, question=record.question, evidence=record.evidence, reasoning=record.reasoning
        )
        item = existing.get(record.external_id)
        if item is None:
            to_create.append(
                Item(
                    source=source,
                    external_id=record.external_id,
                    external_id_is_int=record.external_id_is_int,
                    split=split,
                    **content,
                    **facts,
                )
            )
            continue
        changed = [name for name, value in content.items() if getattr(item, name) != value]
        if item.split != split:
            changed.append("split")
        if not changed:
            report.unchanged += 1
            continue
        for name, value in content.items():
            setattr(item, name, value)
        for name, value in facts.items():
            setattr(item, name, value)
        item.split = split
        item.version += 1
        to_update.append((item, changed))

    report.created = len(to_create)
    report.updated = len(to_update)
    if dry_run:
        transaction.set_rollback(True)
        return report

    Item.objects.bulk_create(to_create, batch_size=500)
    if to_update:
        Item.objects.bulk_update(
            [item for item, _ in to_update],
            fields=[*CONTENT_FIELDS, "split", "version", "question_type", "context_words", "context_tokens",
                    "evidence_count", "reasoning_steps", "updated_at"],
            batch_size=500,
        )
    revisions = [
        ItemRevision(item=item, number=item.version, author=user, stage=item.status,
                     note=f"imported from {file_name}", changed_fields=list(CONTENT_FIELDS), snapshot=item.content())
        for item in to_create
    ] + [
        ItemRevision(item=item, number=item.version, author=user, stage=item.status,
                     note=f"re-imported from {file_name}", changed_fields=changed, snapshot=item.content())
        for item, changed in to_update
    ]
    ItemRevision.objects.bulk_create(revisions, batch_size=500)
    return report


def item_update(
    *,
    item_id: int,
    base_version: int,
    changes: dict,
    user=None,
    note: str = "",
    stage: str | None = None,
    status: str | None = None,
) -> Item:
    """Apply content changes to an item as a new revision, refusing edits based on a stale version.

    Raises StaleVersion (with the current item) when someone saved in between, and
    ValidationError when the result is not a valid item.
    """
    unknown = set(changes) - set(CONTENT_FIELDS)
    if unknown:
        raise ValueError(f"not content fields: {sorted(unknown)}")
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=item_id)
        if item.version != base_version:
            raise StaleVersion(item, base_version)
        changed = [name for name, value in changes.items() if getattr(item, name) != value]
        if not changed and status in (None, item.status):
            return item
        for name in changed:
            setattr(item, name, changes[name])
        item.full_clean(exclude=["question_type"])
        for name, value in derived_facts(
            context=item.context, question=item.question, evidence=item.evidence, reasoning=item.reasoning
        ).items():
            setattr(item, name, value)
        if status is not None:
            item.status = status
        item.version = F("version") + 1
        item.save()
        item.refresh_from_db()
        ItemRevision.objects.create(
            item=item, number=item.version, author=user, stage=stage or item.status, note=note,
            changed_fields=changed + (["status"] if status else []), snapshot=item.content(),
        )
        return item


def item_revert(*, item_id: int, revision_number: int, base_version: int, user=None) -> Item:
    """Restore the content of an earlier revision; the revert is itself a new revision."""
    revision = ItemRevision.objects.get(item_id=item_id, number=revision_number)
    snapshot = {k: v for k, v in revision.snapshot.items() if k in CONTENT_FIELDS}
    return item_update(item_id=item_id, base_version=base_version, changes=snapshot, user=user,
                       note=f"reverted to revision {revision_number}")


EXPORT_CSV_FIELDS = ("id", "context", "question", "options", "answer", "evidence", "multi_hop_reasoning")


def items_export(*, items: Iterable[Item], out: TextIO, fmt: str = "jsonl") -> int:
    """Write items in the official schema (JSONL) or flattened (CSV, options as a JSON list)."""
    count = 0
    if fmt == "jsonl":
        for item in items:
            out.write(json.dumps(item.to_record(), ensure_ascii=False) + "\n")
            count += 1
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(EXPORT_CSV_FIELDS)
        for item in items:
            r = item.to_record()
            writer.writerow([r["id"], r["context"], r["question"], json.dumps(r["options"], ensure_ascii=False),
                             r["answer"], r["clue_graph"]["evidence"], r["clue_graph"]["multi_hop_reasoning"]])
            count += 1
    else:
        raise ValueError(f"unknown export format {fmt!r} (jsonl or csv)")
    return count


def item_import_text(*, text: str, **kwargs) -> ImportReport:
    """Convenience for tests and the admin: import from a string."""
    return item_import(stream=io.BytesIO(text.encode("utf-8")), **kwargs)


__all__ = [
    "ImportRejected", "ImportReport", "StaleVersion", "ValidationError", "derived_facts", "item_import",
    "item_import_text", "item_update", "item_revert", "items_export", "ItemStatus",
    # curation workflow
    "NoSlot", "WorkflowError", "adjudication_resolve", "clue_graph_save", "draft_discard", "draft_save", "item_edit",
    "items_enter_workflow", "lease_next", "lease_release", "leases_expire", "review_submit", "stage_submit",
    "verification_submit",
]


# --------------------------------------------------------------------------
# Curation workflow: leases, stage decisions, drafts (paper §3.1, Table 7).

LIVE = (AssignmentStatus.LEASED, AssignmentStatus.SUBMITTED)
STAGE_ORDER = list(Stage.values)


class WorkflowError(Exception):
    """A workflow action that does not fit the item's current state."""


class NoSlot(WorkflowError):
    """The stage already has its k annotators for this item (or this annotator may not take it)."""


def _config(stage: str) -> StageConfig:
    config = StageConfig.objects.filter(stage=stage).first()
    return config or StageConfig(stage=stage)


def _live(item_id: int, stage: str, now):
    """Assignments that hold a slot: submitted, or leased and not yet expired."""
    return Assignment.objects.filter(item_id=item_id, stage=stage).filter(
        Q(status=AssignmentStatus.SUBMITTED) | Q(status=AssignmentStatus.LEASED, expires_at__gt=now))


def _may_take(item_id: int, stage: str, user) -> bool:
    """A reviewer must be someone other than the people who built the item's clue graph."""
    if stage != Stage.REVIEW:
        return True
    return not Assignment.objects.filter(
        item_id=item_id, stage=Stage.CLUE_GRAPH, annotator=user, status=AssignmentStatus.SUBMITTED).exists()


def _take_slot(*, item: Item, stage: str, user, now, config: StageConfig) -> Assignment:
    """The user's live assignment on a locked item, or a new lease if the stage still has a free slot."""
    # An expired lease no longer holds a slot (someone else may have it now): only a live one is resumed.
    mine = _live(item.pk, stage, now).filter(annotator=user).first()
    if mine is not None:
        if mine.status == AssignmentStatus.LEASED:
            mine.expires_at = now + timedelta(minutes=config.lease_minutes)
            mine.save(update_fields=["expires_at"])
        return mine
    if item.status != stage:
        raise NoSlot(f"{item} is in {item.status}, not {stage}")
    if not _may_take(item.pk, stage, user):
        raise NoSlot("a reviewer must not review an item whose clue graph they built")
    if Adjudication.objects.filter(item=item, stage=stage, status=AdjudicationStatus.OPEN).exists():
        raise NoSlot(f"{item} waits for adjudication")
    if _live(item.pk, stage, now).count() >= config.annotators_required:
        raise NoSlot(f"{item} already has {config.annotators_required} annotator(s) in {stage}")
    # An expired lease of this user on the item is given back before a new one is made.
    Assignment.objects.filter(item=item, stage=stage, annotator=user, status=AssignmentStatus.LEASED).update(
        status=AssignmentStatus.RELEASED)
    return Assignment.objects.create(item=item, stage=stage, annotator=user, leased_at=now,
                                     expires_at=now + timedelta(minutes=config.lease_minutes))


@transaction.atomic
def items_enter_workflow(*, user, split: str | None = None, source: str | None = None,
                         item_ids: Iterable[int] | None = None) -> int:
    """Put imported items into the verification queue, each with a revision; returns how many moved."""
    items = Item.objects.select_for_update().filter(status=ItemStatus.IMPORTED)
    if split:
        items = items.filter(split=split)
    if source:
        items = items.filter(source=source)
    if item_ids is not None:
        items = items.filter(pk__in=list(item_ids))
    moved = list(items.only("pk", "version", *CONTENT_FIELDS).order_by("pk"))
    if not moved:
        return 0
    Item.objects.filter(pk__in=[item.pk for item in moved]).update(
        status=ItemStatus.VERIFICATION, version=F("version") + 1, updated_at=timezone.now())
    ItemRevision.objects.bulk_create([
        ItemRevision(item=item, number=item.version + 1, author=user, stage=ItemStatus.IMPORTED,
                     note="queued for verification", changed_fields=["status"], snapshot=item.content())
        for item in moved
    ], batch_size=500)
    return len(moved)


@transaction.atomic
def leases_expire(*, now=None) -> int:
    """Give back every lease whose time is up (also done lazily by lease_next); idempotent."""
    now = now or timezone.now()
    return Assignment.objects.filter(status=AssignmentStatus.LEASED, expires_at__lte=now).update(
        status=AssignmentStatus.RELEASED)


def lease_next(*, user, stage: str, now=None) -> Assignment | None:
    """Hand the user the next item of a stage as a lease, or None when their queue is empty.

    A user who still holds a live lease in the stage gets it back (renewed). Otherwise
    candidates are locked with SELECT ... FOR UPDATE SKIP LOCKED, so concurrent requests
    never wait for each other nor take the same item; the free slots are recounted
    after the lock, when every earlier lease on that item is visible.
    """
    if stage not in Stage.values:
        raise ValueError(f"unknown stage {stage!r}")
    now = now or timezone.now()
    config = _config(stage)
    with transaction.atomic():
        mine = (Assignment.objects.select_for_update().filter(
            annotator=user, stage=stage, status=AssignmentStatus.LEASED, expires_at__gt=now, item__status=stage)
            .order_by("leased_at").first())
        if mine is not None:
            mine.expires_at = now + timedelta(minutes=config.lease_minutes)
            mine.save(update_fields=["expires_at"])
            return mine
        live = Assignment.objects.filter(item=OuterRef("pk"), stage=stage).filter(
            Q(status=AssignmentStatus.SUBMITTED) | Q(status=AssignmentStatus.LEASED, expires_at__gt=now))
        live_count = live.order_by().values("item").annotate(n=Count("pk")).values("n")
        candidates = (
            Item.objects.filter(status=stage)
            .exclude(Exists(live.filter(annotator=user)))
            .exclude(Exists(Adjudication.objects.filter(item=OuterRef("pk"), stage=stage,
                                                        status=AdjudicationStatus.OPEN)))
            # Only items with a free slot: full ones must not crowd the free ones out of the 50 tries below.
            .annotate(live_slots=Coalesce(Subquery(live_count), 0))
            .filter(live_slots__lt=config.annotators_required)
            .order_by("pk")
        )
        if stage == Stage.REVIEW:
            candidates = candidates.exclude(Exists(Assignment.objects.filter(
                item=OuterRef("pk"), stage=Stage.CLUE_GRAPH, annotator=user, status=AssignmentStatus.SUBMITTED)))
        skipped: list[int] = []
        for _ in range(50):
            item = candidates.exclude(pk__in=skipped).select_for_update(skip_locked=True, of=("self",)).first()
            if item is None:
                return None
            try:
                return _take_slot(item=item, stage=stage, user=user, now=now, config=config)
            except NoSlot:
                skipped.append(item.pk)
        return None


@transaction.atomic
def lease_release(*, assignment_id: int, user) -> None:
    """Give a lease back to the queue (the annotator skips the item)."""
    Assignment.objects.filter(pk=assignment_id, annotator=user, status=AssignmentStatus.LEASED).update(
        status=AssignmentStatus.RELEASED)


def _close_stage(*, item: Item, stage: str) -> None:
    """Leases still open in a stage the item leaves are given back."""
    Assignment.objects.filter(item=item, stage=stage, status=AssignmentStatus.LEASED).update(
        status=AssignmentStatus.RELEASED)


def _move(*, item: Item, stage: str, status: str, user, note: str) -> Item:
    _close_stage(item=item, stage=stage)
    return item_update(item_id=item.pk, base_version=item.version, changes={}, user=user, note=note, stage=stage,
                       status=status)


def _mark_submitted(assignment: Assignment, now) -> None:
    assignment.status, assignment.submitted_at = AssignmentStatus.SUBMITTED, now
    assignment.save(update_fields=["status", "submitted_at"])


def _locked_item(item_id: int) -> Item:
    return Item.objects.select_for_update().get(pk=item_id)


@transaction.atomic
def verification_submit(
    *, item_id: int, user, decision: str, criteria: Iterable[str], comment: str = "", item_version: int, now=None,
) -> VerificationDecision:
    """Record one annotator's keep/delete decision with the Table-7 criteria.

    When the stage has its k decisions: all keep -> rewrite, all delete -> rejected
    (the criteria in the revision note), otherwise an adjudication is opened.
    Refused with StaleVersion when the item changed since the annotator saw `item_version`.
    """
    now = now or timezone.now()
    criteria = set(criteria)
    if criteria - set(CRITERIA):
        raise ValidationError(f"unknown criteria {sorted(criteria - set(CRITERIA))}")
    if decision == Decision.DELETE and not criteria:
        raise ValidationError("A delete decision needs at least one criterion (Table 7, 1.1-1.5).")
    if decision == Decision.KEEP and criteria:
        raise ValidationError("An item that meets a deletion criterion cannot be kept: untick it or delete.")
    if decision not in Decision.values:
        raise ValidationError(f"unknown decision {decision!r}")
    config = _config(Stage.VERIFICATION)
    item = _locked_item(item_id)
    if item.version != item_version:
        raise StaleVersion(item, item_version)
    assignment = _take_slot(item=item, stage=Stage.VERIFICATION, user=user, now=now, config=config)
    if assignment.status == AssignmentStatus.SUBMITTED:
        raise WorkflowError("you have already verified this item")
    verdict = VerificationDecision.objects.create(
        assignment=assignment, item=item, annotator=user, decision=decision, comment=comment,
        item_version=item_version, **{name: name in criteria for name in CRITERIA})
    _mark_submitted(assignment, now)

    decisions = list(VerificationDecision.objects.filter(
        item=item, assignment__stage=Stage.VERIFICATION, assignment__status=AssignmentStatus.SUBMITTED))
    if len(decisions) >= config.annotators_required:
        verdicts = {d.decision for d in decisions}
        who = ", ".join(sorted(d.annotator.get_username() for d in decisions))
        if verdicts == {Decision.KEEP}:
            _move(item=item, stage=Stage.VERIFICATION, status=ItemStatus.REWRITE, user=user,
                  note=f"verification: kept by {who}")
        elif verdicts == {Decision.DELETE}:
            reasons = sorted({c for d in decisions for c in d.criteria})
            _move(item=item, stage=Stage.VERIFICATION, status=ItemStatus.REJECTED, user=user,
                  note=f"verification: deleted by {who} ({', '.join(reasons)})")
        else:
            Adjudication.objects.get_or_create(
                item=item, stage=Stage.VERIFICATION, status=AdjudicationStatus.OPEN,
                defaults={"reason": "; ".join(f"{d.annotator.get_username()}: {d.decision}" for d in decisions)})
    return verdict


@transaction.atomic
def adjudication_resolve(*, adjudication_id: int, user, decision: str, comment: str = "") -> Adjudication:
    """Settle a disagreement: keep (item goes on to rewrite) or delete (rejected)."""
    adjudication = Adjudication.objects.select_for_update().get(pk=adjudication_id)
    if adjudication.status != AdjudicationStatus.OPEN:
        raise WorkflowError("this disagreement has already been resolved")
    if decision not in Decision.values:
        raise ValidationError(f"unknown decision {decision!r}")
    from detectbench_web.roles import is_researcher

    took_part = VerificationDecision.objects.filter(item=adjudication.item_id, annotator=user,
                                                    assignment__status=AssignmentStatus.SUBMITTED).exists()
    if took_part and not is_researcher(user):
        raise WorkflowError("an adjudicator must not be one of the annotators who disagreed")
    item = _locked_item(adjudication.item_id)
    status = ItemStatus.REWRITE if decision == Decision.KEEP else ItemStatus.REJECTED
    _move(item=item, stage=adjudication.stage, status=status, user=user,
          note=f"adjudication: {decision}" + (f" ({comment})" if comment else ""))
    adjudication.status, adjudication.decision, adjudication.comment = AdjudicationStatus.RESOLVED, decision, comment
    adjudication.resolved_by, adjudication.resolved_at = user, timezone.now()
    adjudication.save()
    return adjudication


def item_edit(*, item_id: int, base_version: int, changes: dict, user, stage: str, note: str = "",
              finish: bool = False) -> Item:
    """Save an annotator's edit in a stage as a new revision and drop their draft.

    Refused with StaleVersion when the item changed since `base_version`, and with
    WorkflowError when the item is not in `stage` (published or rejected items, or
    items in another stage, are not edited behind the workflow's back). `finish`
    also marks the user's work in the stage done (stage_submit), in the same
    transaction: either both happen or neither.
    """
    with transaction.atomic():
        current = _locked_item(item_id)
        if current.version != base_version:
            raise StaleVersion(current, base_version)
        if current.status != stage:
            raise WorkflowError(f"{current} is in {current.get_status_display()}, not in {Stage(stage).label}: "
                                f"it cannot be edited here now")
        item = item_update(item_id=item_id, base_version=base_version, changes=changes, user=user, note=note,
                           stage=stage)
        Draft.objects.filter(item_id=item_id, user=user, stage=stage).delete()
        if finish:
            item = stage_submit(item_id=item_id, user=user, stage=stage, item_version=item.version)
        return item


def clue_graph_save(*, item_id: int, base_version: int, graph: EditableGraph, user, note: str = "",
                    finish: bool = False) -> Item:
    """Write the edited clue graph back as the official evidence / multi_hop_reasoning texts."""
    evidence, reasoning = graph.texts()
    return item_edit(item_id=item_id, base_version=base_version, changes={"evidence": evidence, "reasoning": reasoning},
                     user=user, stage=Stage.CLUE_GRAPH, note=note or "clue graph edited", finish=finish)


@transaction.atomic
def stage_submit(*, item_id: int, user, stage: str, item_version: int, now=None) -> Item:
    """Mark the user's work in an editing stage (rewrite, clue graph) done; advance when k are done."""
    if stage not in (Stage.REWRITE, Stage.CLUE_GRAPH):
        raise ValueError("stage_submit is for the editing stages")
    now = now or timezone.now()
    config = _config(stage)
    item = _locked_item(item_id)
    if item.version != item_version:
        raise StaleVersion(item, item_version)
    assignment = _take_slot(item=item, stage=stage, user=user, now=now, config=config)
    if assignment.status != AssignmentStatus.SUBMITTED:
        _mark_submitted(assignment, now)
    done = Assignment.objects.filter(item=item, stage=stage, status=AssignmentStatus.SUBMITTED).count()
    if done >= config.annotators_required:
        return _move(item=item, stage=stage, status=NEXT_STATUS[stage], user=user, note=f"{stage} done")
    return item


@transaction.atomic
def review_submit(*, item_id: int, user, action: str, item_version: int, send_back_to: str = "", comment: str = "",
                  now=None) -> ReviewDecision:
    """Approve (publish) or send the item back to an earlier stage with a comment."""
    now = now or timezone.now()
    if action == ReviewAction.SEND_BACK:
        if send_back_to not in (Stage.VERIFICATION, Stage.REWRITE, Stage.CLUE_GRAPH):
            raise ValidationError("Choose the stage to send the item back to.")
        if not comment.strip():
            raise ValidationError("Say what needs fixing when sending an item back.")
    elif action == ReviewAction.APPROVE:
        send_back_to = ""
    else:
        raise ValidationError(f"unknown review action {action!r}")
    item = _locked_item(item_id)
    if item.version != item_version:
        raise StaleVersion(item, item_version)
    assignment = _take_slot(item=item, stage=Stage.REVIEW, user=user, now=now, config=_config(Stage.REVIEW))
    review = ReviewDecision.objects.create(assignment=assignment, item=item, reviewer=user, action=action,
                                           send_back_to=send_back_to, comment=comment, item_version=item_version)
    _mark_submitted(assignment, now)
    if action == ReviewAction.APPROVE:
        _move(item=item, stage=Stage.REVIEW, status=ItemStatus.PUBLISHED, user=user, note="review: approved")
    else:
        # The stages from the target on are done afresh: their earlier slots no longer count.
        redo = STAGE_ORDER[STAGE_ORDER.index(send_back_to):]
        Assignment.objects.filter(item=item, stage__in=redo, status__in=LIVE).update(
            status=AssignmentStatus.SUPERSEDED)
        item_update(item_id=item.pk, base_version=item.version, changes={}, user=user, stage=Stage.REVIEW,
                    status=send_back_to, note=f"review: sent back to {send_back_to}: {comment}")
    return review


@transaction.atomic
def draft_save(*, item_id: int, user, stage: str, base_version: int, data: dict) -> Draft:
    """Autosave unsaved work (one draft per user, item and stage)."""
    draft, _ = Draft.objects.update_or_create(
        item_id=item_id, user=user, stage=stage, defaults={"base_version": base_version, "data": data})
    return draft


@transaction.atomic
def draft_discard(*, item_id: int, user, stage: str) -> None:
    Draft.objects.filter(item_id=item_id, user=user, stage=stage).delete()
