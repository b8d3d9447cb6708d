"""Reads from the item store: lists, filters, revisions and history."""
from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Count, Q, QuerySet

from annotation import clue_graph
from annotation.diffing import content_diff
from annotation.highlight import segments
from annotation.models import Item, ItemRevision
from annotation.models.items import CONTENT_FIELDS

#: The columns the item browser shows.
BROWSER_FIELDS = ("id", "source", "external_id", "split", "question", "status", "question_type", "context_words",
                  "evidence_count", "reasoning_steps", "version")


def item_list(
    *,
    split: str | None = None,
    source: str | None = None,
    status: str | None = None,
    question_type: str | None = None,
    search: str | None = None,
) -> QuerySet[Item]:
    items = Item.objects.all()
    if split:
        items = items.filter(split=split)
    if source:
        items = items.filter(source=source)
    if status:
        items = items.filter(status=status)
    if question_type:
        items = items.filter(question_type=question_type)
    if search:
        if connection.vendor == "postgresql":
            vector = SearchVector("context", "question", config="english")
            query = SearchQuery(search, config="english", search_type="websearch")
            items = items.annotate(_search=vector).filter(
                Q(_search=query) | Q(question__icontains=search) | Q(external_id=search)
            )
        else:
            items = items.filter(Q(context__icontains=search) | Q(question__icontains=search) | Q(external_id=search))
    return items


def item_splits() -> list[str]:
    """The splits the items have, in order."""
    return list(Item.objects.order_by("split").values_list("split", flat=True).distinct())


def item_facets() -> dict:
    """Distinct values for the browser's filters."""
    return {
        "splits": item_splits(),
        "sources": list(Item.objects.order_by("source").values_list("source", flat=True).distinct()),
        "status_counts": dict(Item.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")),
    }


def item_revisions(*, item: Item) -> QuerySet[ItemRevision]:
    return item.revisions.select_related("author").order_by("-number")


def revision_snapshot(*, item: Item, number: int) -> dict | None:
    revision = ItemRevision.objects.filter(item=item, number=number).only("snapshot").first()
    return revision.snapshot if revision else None


def item_history(*, item: Item) -> list[dict]:
    """Revisions newest first, each with the diff against the revision before it."""
    revisions = list(item.revisions.select_related("author").order_by("number"))
    entries = []
    previous: dict = {}
    for revision in revisions:
        entries.append({"revision": revision, "diffs": content_diff(previous, revision.snapshot) if previous else []})
        previous = revision.snapshot
    return list(reversed(entries))


def item_conflict(*, item: Item, base_version: int) -> dict:
    """What others changed since `base_version`: the diff to the stored item and who changed it."""
    base = revision_snapshot(item=item, number=base_version) or {}
    return {"version": item.version, "base_version": base_version,
            "diffs": content_diff(base, item.content()),
            "authors": [r.author for r in item.revisions.filter(number__gt=base_version).select_related("author")]}


def item_browser(*, split=None, source=None, status=None, question_type=None, search=None) -> QuerySet[Item]:
    """The item browser's rows: the filtered items in a stable order, only the columns it shows."""
    return (item_list(split=split, source=source, status=status, question_type=question_type, search=search)
            .order_by("source", "split", "id").only(*BROWSER_FIELDS))


def item_detail(*, item: Item) -> dict:
    """An item's page: its clue graph, the clues anchored in the context, the checks, recent revisions."""
    graph = clue_graph.parse_clue_graph(item.evidence, item.reasoning)
    anchors = clue_graph.anchor_clues(graph.clues, item.context)
    spans = [(a.start, a.end, a.clue_index, a.exact) for a in anchors if a is not None]
    return {
        "graph": graph,
        "clues": [{"clue": clue, "anchor": anchor, "number": i + 1}
                  for i, (clue, anchor) in enumerate(zip(graph.clues, anchors))],
        "segments": segments(item.context, spans),
        "issues": clue_graph.check_graph(graph, item.context),
        "revisions": item_revisions(item=item)[:20],
    }


def item_changes_since_previous(*, item: Item, fields: list[str] | None = None) -> list:
    """The diff of the item's last change (from the revision before it to the stored item)."""
    previous = revision_snapshot(item=item, number=item.version - 1)
    return content_diff(previous, item.content(), fields) if previous else []


def item_changes_since_stage(*, item: Item, stage: str) -> list:
    """The diff from the item as it was at its last revision in `stage` (e.g. verification) to the stored item."""
    revision = item.revisions.filter(stage=stage).order_by("-number").only("snapshot").first()
    return content_diff(revision.snapshot, item.content()) if revision else []



def content_changes_since(*, item, content_version: int) -> list[dict]:
    """What changed in an item's content after it last had ``content_version``: one entry per content change (its
    revision, the new content version, the fields, when and by whom), oldest first. Empty when the version is
    current (also after a revert to that content: the item has it again)."""
    if content_version == item.content_version:
        return []
    revisions = list(ItemRevision.objects.filter(item=item).select_related("author").order_by("number"))
    last_at = max((i for i, revision in enumerate(revisions) if revision.content_version == content_version),
                  default=None)
    if last_at is None:  # a version no revision records: the changes to the versions above it, as before
        revisions, last_at = [r for r in revisions if r.content_version > content_version], -1
    changes, previous = [], content_version
    for revision in revisions[last_at + 1:]:
        if revision.content_version == previous:
            continue  # a status-only revision after a content change
        previous = revision.content_version
        fields = [f for f in revision.changed_fields if f in CONTENT_FIELDS] or list(revision.changed_fields)
        changes.append({"revision": revision.number, "content_version": revision.content_version, "fields": fields,
                        "at": revision.created_at, "by": revision.author.get_username() if revision.author else "",
                        "note": revision.note})
    return changes
