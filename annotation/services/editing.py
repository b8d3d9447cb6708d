"""The editing stages (rewrite, clue graph): versioned saves, finishing a stage, autosaved drafts."""
from __future__ import annotations

import time

from django.db import transaction
from django.utils import timezone

from annotation.clue_graph.editing import EditableGraph, EditableStep, editable_graph
from annotation.errors import ItemNotFound, StaleVersion, WorkflowError
from annotation.models import (
    CONTENT_FIELDS,
    MAX_VERSION,
    AnnotatorLease,
    AnnotatorLeaseStatus,
    Draft,
    Item,
    ItemRevision,
    Stage,
)
from annotation.services.items import item_update
from annotation.services.leases import locked_item, mark_submitted, move_item, stage_config, take_slot
from foundation.errors import Invalid, NotFound
from foundation.roles import is_researcher
from foundation.words import gettext


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
        editable_item(item_id=item_id, base_version=base_version, stage=stage, user=user)
        item = item_update(item_id=item_id, base_version=base_version, changes=changes, user=user, note=note,
                           stage=stage)
        draft_discard(item_id=item_id, user=user, stage=stage)
        if finish:
            item = stage_submit(item_id=item_id, user=user, stage=stage, item_version=item.version)
        return item


def editable_item(*, item_id: int, base_version: int, stage: str, user) -> Item:
    """The item, locked, when `user`'s work in `stage` may change it now: refused with StaleVersion when it changed
    since `base_version`, with WorkflowError when it is not in `stage` (published or rejected items, or items in
    another stage, are not edited behind the workflow's back), and with NoSlot when the user holds none of the
    stage's slots on it and none is free (`take_slot`: an edit takes a free slot, as finishing the stage does; the
    stage's annotators are the ones who hold its slots). Call it inside the transaction that writes."""
    current = locked_item(item_id)
    if current.version != base_version:
        raise StaleVersion(current, base_version)
    if current.status != stage:
        raise WorkflowError(gettext("%(item)s is in %(status)s, not in %(stage)s: it cannot be edited here now.",
                                    item=current, status=current.get_status_display(), stage=Stage(stage).label))
    take_slot(item=current, stage=stage, user=user, now=timezone.now(), config=stage_config(stage))
    return current


def item_revert(*, item_id: int, revision_number: int, base_version: int, user=None) -> Item:
    """Restore the content of an earlier revision; the revert is itself a new revision, at that revision's content
    version (the rows recorded at it are current again).

    A revert is an edit: in an editing stage it asks what an edit there asks (`editable_item`: the version, the
    stage's slot); an item elsewhere (imported, in verification or review, published, rejected) is reverted by a
    researcher only, never behind the workflow's back by an annotator (WorkflowError). `user=None` is the system
    (a script), which the workflow does not stop."""
    revision = ItemRevision.objects.filter(item_id=item_id, number=revision_number).first()
    if revision is None:
        raise NotFound(gettext("Item %(id)s has no revision %(n)s.", id=item_id, n=revision_number),
                       code="revision_not_found")
    snapshot = {k: v for k, v in revision.snapshot.items() if k in CONTENT_FIELDS}
    with transaction.atomic():
        if user is not None:
            current = locked_item(item_id)
            if current.status in Stage.values and Stage(current.status).editing:
                editable_item(item_id=item_id, base_version=base_version, stage=current.status, user=user)
            elif not is_researcher(user):
                raise WorkflowError(gettext(
                    "%(item)s is %(status)s: only a researcher reverts it outside the editing stages.",
                    item=current, status=str(current.get_status_display()).lower()))
        return item_update(item_id=item_id, base_version=base_version, changes=snapshot, user=user,
                           note=f"reverted to revision {revision_number}")


def clue_graph_save(*, item_id: int, base_version: int, graph: EditableGraph, user, note: str = "",
                    finish: bool = False) -> Item:
    """Write the edited clue graph back as the official evidence / multi_hop_reasoning texts; refused (Invalid,
    naming the row) when those texts would read back as another graph (`written_as_given`)."""
    evidence, reasoning = graph.texts()
    written_as_given(graph, evidence, reasoning)
    return item_edit(item_id=item_id, base_version=base_version, changes={"evidence": evidence, "reasoning": reasoning},
                     user=user, stage=Stage.CLUE_GRAPH, note=note or "clue graph edited", finish=finish)


def written_as_given(graph: EditableGraph, evidence: str, reasoning: str) -> None:
    """Refuse (Invalid) a graph whose official texts read back as another graph: a clue, implication, input or
    conclusion holding the format's own marks (an arrow `->`, a line break, an input's ` + `, a leading number
    or a header's closing colon) would be stored as other clues or steps than the ones given, and so would the
    gold key information read from them. The first row that does not come back names itself."""
    back = editable_graph(evidence, reasoning)
    clues = [(t.strip(), i.strip()) for t, i in graph.clues if t.strip() or i.strip()]
    steps = [(tuple(x.strip() for x in s.inputs if x.strip()), s.output.strip()) for s in graph.steps
             if s.output.strip() or any(x.strip() for x in s.inputs)]
    why = gettext("it holds the format's own marks (an arrow ->, a line break, ' + ' between inputs, a leading "
                  "number or a closing colon), so it would be stored as something else: reword it")
    for n, given in enumerate(clues):
        if n >= len(back.clues) or back.clues[n] != given:
            raise Invalid(gettext("Clue %(n)s (%(text)s): %(why)s.", n=n + 1, text=_quoted(" -> ".join(given)),
                                  why=why), field="clues")
    back_steps = [(tuple(s.inputs), s.output) for s in back.steps]
    for n, given in enumerate(steps):
        if n >= len(back_steps) or back_steps[n] != given:
            text = " + ".join(given[0]) + " -> " + given[1]
            raise Invalid(gettext("Step S%(n)s (%(text)s): %(why)s.", n=n + 1, text=_quoted(text), why=why),
                          field="steps")
    if len(back.clues) != len(clues) or len(back_steps) != len(steps):
        raise Invalid(gettext("The clue graph would be stored with other rows than the ones given: %(why)s.",
                              why=why), field="clues")


def _quoted(text: str, most: int = 80) -> str:
    text = " ".join(text.split())
    return f"“{text[:most]}…”" if len(text) > most else f"“{text}”"


def clue_graph_replace(*, item_id: int, base_version: int, clues: list[tuple[str, str]],
                       steps: list[tuple[list[str], str]], user, note: str = "") -> Item:
    """Replace an item's clues and steps (the API's whole-graph submit), keeping the stored headers and notes."""
    item = Item.objects.filter(pk=item_id).only("evidence", "reasoning").first()
    if item is None:
        raise ItemNotFound(gettext("No item %(id)s.", id=item_id))
    graph = editable_graph(item.evidence, item.reasoning)
    headers = [step.header for step in graph.steps]
    graph.clues = [(text, implication) for text, implication in clues]
    graph.steps = [EditableStep(list(inputs), output, headers[i] if i < len(headers) else None)
                   for i, (inputs, output) in enumerate(steps)]
    return clue_graph_save(item_id=item_id, base_version=base_version, graph=graph, user=user, note=note)


@transaction.atomic
def stage_submit(*, item_id: int, user, stage: str, item_version: int, now=None) -> Item:
    """Mark the user's work in an editing stage (rewrite, clue graph) done; advance when k are done."""
    if stage not in Stage.values or not Stage(stage).editing:
        raise Invalid(gettext("Only the editing stages are finished this way."), field="stage")
    now = now or timezone.now()
    config = stage_config(stage)
    item = locked_item(item_id)
    if item.version != item_version:
        raise StaleVersion(item, item_version)
    lease = take_slot(item=item, stage=stage, user=user, now=now, config=config)
    if lease.status != AnnotatorLeaseStatus.SUBMITTED:
        mark_submitted(lease, now)
    done = AnnotatorLease.objects.filter(item=item, stage=stage, status=AnnotatorLeaseStatus.SUBMITTED).count()
    if done >= config.annotators_required:
        return move_item(item=item, stage=stage, status=Stage(stage).next_status, user=user, note=f"{stage} done")
    return item


EXPLICIT_SAVE = Draft.EXPLICIT_SAVE


def page_stamp() -> int:
    """The stamp an editor page is shown with (microseconds since the epoch), which its draft saves carry."""
    return time.time_ns() // 1000


@transaction.atomic
def draft_save(*, item_id: int, user, stage: str, base_version: int, data: dict, page: int = 0,
               seq: int = 0) -> Draft | None:
    """Autosave unsaved work (one draft per user, item and stage); None when the save is not kept.

    Saves arrive in any order: a page reloaded (or its work saved) while an autosave was on the way does not stop
    that request, which can reach the server after newer ones. So each save carries its page's stamp (`page`,
    from page_stamp() when the editor was shown) and its order within the page (`seq`, counted by the page), and
    only a save at least as new as the stored draft's is kept: never one from an older page, an earlier one of
    the same page, or one from a page shown before the work was saved (draft_discard). Saves without them
    (0, 0) are kept only over others without them. A save the annotator asked for (`seq=EXPLICIT_SAVE`: a
    refused Save whose text is kept) is always kept, after whatever is stored. A `base_version` no item can have
    (past MAX_VERSION, the most its column holds) is refused (Invalid).
    """
    if not 1 <= base_version <= MAX_VERSION:
        raise Invalid(gettext("A version is a whole number from %(low)s to %(high)s.", low=1, high=MAX_VERSION),
                      field="base_version")
    draft, created = Draft.objects.select_for_update().get_or_create(
        item_id=item_id, user=user, stage=stage,
        defaults={"base_version": base_version, "data": data, "page": page, "seq": seq})
    if created:
        return draft
    if seq == EXPLICIT_SAVE:  # what the annotator asked for is always kept, and comes after what is stored
        page = max(page, draft.page)
    elif (page, seq) < (draft.page, draft.seq):
        return None
    draft.base_version, draft.data, draft.page, draft.seq = base_version, data, page, seq
    draft.save(update_fields=["base_version", "data", "page", "seq", "updated_at"])
    return draft


@transaction.atomic
def draft_discard(*, item_id: int, user, stage: str) -> None:
    """Drop the draft: its work was saved (or thrown away). What it keeps is when, so that an autosave from a page
    shown before that moment, arriving late, does not bring the old work back."""
    now = page_stamp()
    draft, created = Draft.objects.select_for_update().get_or_create(
        item_id=item_id, user=user, stage=stage, defaults={"base_version": 0, "data": None, "page": now, "seq": 0})
    if created:  # no draft was kept (nothing typed, or only the Save itself): the moment is kept all the same
        return
    if (now, 0) > (draft.page, draft.seq):
        draft.page, draft.seq = now, 0
    draft.data = None
    draft.save(update_fields=["data", "page", "seq", "updated_at"])
