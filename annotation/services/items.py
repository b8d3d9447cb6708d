"""Writes to the item store: import, export, versioned edits and reverts, derived facts."""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO, TextIO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from annotation import clue_graph
from annotation.dataformat import Limits, ParsedRecord, RecordError, json_field_problems, parse_jsonl
from annotation.errors import CuratedConflicts, ImportRejected, ItemNotFound, StaleVersion
from annotation.item_facts import question_type, token_count, word_count
from annotation.models import CONTENT_FIELDS, Item, ItemRevision
from annotation.services.content_versions import assign_content_versions
from annotation.translations import MIRRORED_FIELDS, following_the_original
from foundation import csv_safety
from foundation.error_mapping import as_service_error
from foundation.errors import Invalid
from foundation.words import gettext

#: What an import does with an item edited in the app since its last import (see `item_import`).
CURATED_REFUSE, CURATED_KEEP, CURATED_OVERWRITE = "refuse", "keep", "overwrite"
CURATED_POLICIES = (CURATED_REFUSE, CURATED_KEEP, CURATED_OVERWRITE)
#: The note of a revision written by an import starts with one of these.
IMPORT_NOTES = ("imported from ", "re-imported from ")
#: The item's JSON content fields and what each holds: never null (their columns are NOT NULL), only what JSON has.
JSON_CONTENT_SHAPES = {"options": list, "translations": dict, "extra": dict}


def content_problems(content: dict) -> dict[str, list[str]]:
    """Why the JSON fields of an item's content (or changes to it) cannot be stored, field -> messages (none: {}): a
    null or a value of another shape, NaN or an infinity, a NUL, ... (`dataformat.json_field_problems`). Every
    write of content checks it (item_update, item_create; an import's decoder refuses the same); the admin's form
    shows it beside the field."""
    return json_field_problems(content, JSON_CONTENT_SHAPES)


def _check_content(content: dict) -> None:
    problems = content_problems(content)
    if problems:
        raise Invalid(errors=problems, field=next(iter(problems)))


@dataclass(frozen=True)
class CuratedConflict:
    """A line of an import file whose item was edited in the app since it was last imported."""

    file: str
    line: int
    external_id: str
    revision: int
    author: str

    field = ""

    @property
    def message(self) -> str:
        by = f" by {self.author}" if self.author else ""
        return f"item {self.external_id} was edited in the app (revision {self.revision}{by}); not overwritten"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class ImportReport:
    file: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    kept_curated: int = 0
    overwrote_curated: int = 0
    errors: list[RecordError] = field(default_factory=list)
    conflicts: list[CuratedConflict] = field(default_factory=list)
    dry_run: bool = False

    def summary(self) -> str:
        prefix = "dry run: would have " if self.dry_run else ""
        curated = ""
        if self.kept_curated:
            curated += f", kept {self.kept_curated} edited in the app"
        if self.overwrote_curated:
            curated += f", overwrote {self.overwrote_curated} edited in the app"
        return (
            f"{prefix}created {self.created}, updated {self.updated}, "
            f"unchanged {self.unchanged}, rejected {self.rejected}{curated}"
        )


def curated_since_import(items: list[Item]) -> dict[int, ItemRevision]:
    """The items whose content was changed in the app after their last import and is not that import's content
    now: item id -> the latest revision that changed the content (its number and author name it in a conflict; a
    status move after it, which keeps the content, is not an edit and names nothing). An edit undone (a revert to
    the imported content, which takes the import's content version again) leaves nothing curated."""
    if not items:
        return {}
    now = {item.pk: item.content_version for item in items if item.version > 1}
    last_import: dict[int, int] = {}
    before: dict[int, int] = {}  # the content version of the item's revision before this one
    latest_edit: dict[int, ItemRevision] = {}
    for revision in (ItemRevision.objects.filter(item_id__in=list(now)).select_related("author")
                     .order_by("item_id", "number")):
        if revision.note.startswith(IMPORT_NOTES):
            last_import[revision.item_id] = revision.content_version
            latest_edit.pop(revision.item_id, None)
        elif revision.content_version != before.get(revision.item_id, 1):
            latest_edit[revision.item_id] = revision
        before[revision.item_id] = revision.content_version
    return {item_id: revision for item_id, revision in latest_edit.items()
            if now[item_id] != last_import.get(item_id, 1)}


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


def import_limits() -> Limits:
    """The declared bounds of an item import (settings ITEM_IMPORT_*; `annotation.dataformat.Limits`)."""
    return Limits(max_options=settings.ITEM_IMPORT_MAX_OPTIONS, max_context_chars=settings.ITEM_IMPORT_MAX_CONTEXT_CHARS,
                  max_question_chars=settings.ITEM_IMPORT_MAX_QUESTION_CHARS,
                  max_option_chars=settings.ITEM_IMPORT_MAX_OPTION_CHARS,
                  max_clue_graph_chars=settings.ITEM_IMPORT_MAX_CLUE_GRAPH_CHARS,
                  max_file_bytes=settings.ITEM_IMPORT_MAX_FILE_BYTES)


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
    curated: str = CURATED_REFUSE,
) -> ImportReport:
    """Import DetectBench JSONL: all or nothing (or skip invalid lines), upsert on (source, external id).

    Refused with ImportRejected (every bad line as FILE:LINE: field: why) when a line is
    invalid or unstorable (see dataformat), or when the file holds no valid record at all.

    A revision is written for every created item and for every item whose content changed;
    unchanged items are left alone, so re-importing a file is idempotent.

    An item whose content was edited in the app since its last import is never overwritten silently:
    with ``curated="refuse"`` (the default) such a line is a conflict (``FILE:LINE: item 9001 was edited in
    the app (revision 13 by annotator2); not overwritten``) and the import is refused with nothing written
    (CuratedConflicts); ``"keep"`` leaves those items as they are and imports the rest; ``"overwrite"``
    writes the file's content as a new revision whose note names the revision it replaced.
    """
    if curated not in CURATED_POLICIES:
        raise Invalid(gettext("“curated” is one of %(policies)s.", policies=", ".join(CURATED_POLICIES)), field="curated")
    for name, value in (("source", source), ("split", split)):  # refused on its field, not by the column (DataError)
        limit = Item._meta.get_field(name).max_length
        if len(value) > limit:
            raise Invalid(errors={name: [gettext("%(n)s characters: at most %(limit)s", n=f"{len(value):,}",
                                                 limit=f"{limit:,}")]}, field=name)
    parsed = parse_jsonl(stream, file=file_name, limits=import_limits())
    report = ImportReport(file=file_name, errors=parsed.errors, dry_run=dry_run)
    bad_lines = {e.line for e in parsed.errors}
    report.rejected = len(bad_lines)
    if parsed.errors and (not skip_invalid or not parsed.records or parsed.too_large):
        raise ImportRejected(parsed.errors)  # with nothing valid to import, skipping the invalid lines is no help

    existing = {
        item.external_id: item
        for item in Item.objects.select_for_update().filter(
            source=source, external_id__in=[r.external_id for r in parsed.records]
        )
    }
    to_create: list[Item] = []
    to_update: list[tuple[Item, list[str]]] = []
    edited = curated_since_import(list(existing.values()))
    replaced: dict[int, ItemRevision] = {}
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
        if item.pk in edited and set(changed) & set(CONTENT_FIELDS):
            revision = edited[item.pk]
            if curated == CURATED_KEEP:
                report.kept_curated += 1
                continue
            if curated == CURATED_REFUSE:
                report.conflicts.append(CuratedConflict(
                    file=file_name, line=record.line, external_id=record.external_id, revision=revision.number,
                    author=revision.author.get_username() if revision.author else ""))
                continue
            replaced[item.pk] = revision
            report.overwrote_curated += 1
        before = {name: getattr(item, name) for name in MIRRORED_FIELDS}
        for name, value in content.items():
            setattr(item, name, value)
        _mark_translations(item, changed, before)  # the file changed the original, not its translations
        for name, value in facts.items():
            setattr(item, name, value)
        item.split = split
        item.version += 1
        to_update.append((item, changed))

    if report.conflicts:
        raise CuratedConflicts(report.conflicts)
    # A changed content takes its own version: one the item had with that content (the file's content an edit was
    # made over, say), else a new one (services.content_versions).
    assign_content_versions([item for item, changed in to_update if set(changed) & set(CONTENT_FIELDS)])
    report.created = len(to_create)
    report.updated = len(to_update)
    if dry_run:
        transaction.set_rollback(True)
        return report

    Item.objects.bulk_create(to_create, batch_size=500)
    if to_update:
        Item.objects.bulk_update(
            [item for item, _ in to_update],
            fields=[*CONTENT_FIELDS, "split", "version", "content_version", "highest_content_version", "question_type", "context_words", "context_tokens",
                    "evidence_count", "reasoning_steps", "updated_at"],
            batch_size=500,
        )
    revisions = [
        ItemRevision(item=item, number=item.version, content_version=item.content_version, author=user,
                     stage=item.status, note=f"imported from {file_name}", changed_fields=list(CONTENT_FIELDS), snapshot=item.content())
        for item in to_create
    ] + [
        ItemRevision(item=item, number=item.version, content_version=item.content_version, author=user,
                     stage=item.status, note=f"re-imported from {file_name}" + _replaced_note(replaced.get(item.pk)),
                     changed_fields=changed, snapshot=item.content())
        for item, changed in to_update
    ]
    ItemRevision.objects.bulk_create(revisions, batch_size=500)
    return report


def _mark_translations(item: Item, changed: list[str], before: dict) -> None:
    """An edit of the original that brings no translations marks them out of date, or up to date again when it
    restores their original (annotation.translations), in the same write: `changed` then names them too."""
    after = {name: getattr(item, name) for name in MIRRORED_FIELDS}
    if "translations" not in changed and (
            followed := following_the_original(item.translations, before, after)) is not None:
        item.translations = followed
        changed.append("translations")


def _replaced_note(revision: ItemRevision | None) -> str:
    if revision is None:
        return ""
    by = f" by {revision.author.get_username()}" if revision.author else ""
    return f" over the app's edit (revision {revision.number}{by}, content version {revision.content_version})"


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
    Invalid (with the field errors) when the result is not a valid item.
    """
    unknown = set(changes) - set(CONTENT_FIELDS)
    if unknown:
        raise Invalid(gettext("Not content fields: %(fields)s.", fields=", ".join(sorted(unknown))), code="not_content")
    _check_content(changes)
    with transaction.atomic():
        item = Item.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise ItemNotFound(gettext("No item %(id)s.", id=item_id))
        if item.version != base_version:
            raise StaleVersion(item, base_version)
        changed = [name for name, value in changes.items() if getattr(item, name) != value]
        if not changed and status in (None, item.status):
            return item
        before = {name: getattr(item, name) for name in MIRRORED_FIELDS}
        for name in changed:
            setattr(item, name, changes[name])
        _mark_translations(item, changed, before)
        try:
            item.full_clean(exclude=["question_type"])
        except ValidationError as exc:
            raise as_service_error(exc) from exc
        for name, value in derived_facts(
            context=item.context, question=item.question, evidence=item.evidence, reasoning=item.reasoning
        ).items():
            setattr(item, name, value)
        if status is not None:
            item.status = status
        item.version = F("version") + 1
        if changed:  # a content the item had before (a revert) takes its version again: services.content_versions
            assign_content_versions([item])
        item.save()
        item.refresh_from_db()
        ItemRevision.objects.create(
            item=item, number=item.version, content_version=item.content_version, author=user, stage=stage or item.status, note=note,
            changed_fields=changed + (["status"] if status else []), snapshot=item.content(),
        )
        return item


@transaction.atomic
def item_create(*, source: str, external_id: str, split: str, content: dict, user=None,
                external_id_is_int: bool = True, status: str | None = None, note: str = "created") -> Item:
    """Create one item (e.g. in the admin) with its derived facts and its first revision."""
    unknown = set(content) - set(CONTENT_FIELDS)
    if unknown:
        raise Invalid(gettext("Not content fields: %(fields)s.", fields=", ".join(sorted(unknown))), code="not_content")
    _check_content(content)
    item = Item(source=source, external_id=external_id, external_id_is_int=external_id_is_int, split=split, **content)
    if status is not None:
        item.status = status
    for name, value in derived_facts(context=item.context, question=item.question, evidence=item.evidence,
                                     reasoning=item.reasoning).items():
        setattr(item, name, value)
    try:
        item.full_clean(exclude=["question_type"])
    except ValidationError as exc:
        raise as_service_error(exc) from exc
    item.save()
    ItemRevision.objects.create(item=item, number=item.version, author=user, stage=item.status, note=note,
                                changed_fields=list(content), snapshot=item.content())
    return item


EXPORT_CSV_FIELDS = ("id", "context", "question", "options", "answer", "evidence", "multi_hop_reasoning")


def items_export(*, items: Iterable[Item], out: TextIO, fmt: str = "jsonl") -> int:
    """Write items in the official schema (JSONL) or flattened (CSV, options as a JSON list).

    CSV cells that a spreadsheet would run as a formula (= + - @ tab CR) are written as text
    (csv_safety); the JSONL keeps the text exactly.
    """
    count = 0
    if fmt == "jsonl":
        for item in items:
            out.write(json.dumps(item.to_record(), ensure_ascii=False) + "\n")
            count += 1
    elif fmt == "csv":
        writer = csv_safety.writer(out)
        writer.writerow(EXPORT_CSV_FIELDS)
        for item in items:
            r = item.to_record()
            writer.writerow([r["id"], r["context"], r["question"], json.dumps(r["options"], ensure_ascii=False),
                             r["answer"], r["clue_graph"]["evidence"], r["clue_graph"]["multi_hop_reasoning"]])
            count += 1
    else:
        raise Invalid(gettext("Unknown export format %(fmt)s (jsonl or csv).", fmt=fmt), field="fmt")
    return count
