"""Autosaved drafts of the editing stages (annotation.services.editing): saves arrive in any order, and only one at
least as new as the stored draft is kept; a draft whose work was saved does not come back from a late autosave.

Through every autosave address of the annotation pages too. They are discovered, not listed: every annotation
page of an item (each route whose only argument is the item's id, for an item in each editing stage) that carries
a `draft_page` stamp in a form, and every htmx address that form (or a control inside it) posts to."""
from __future__ import annotations

import html
import itertools
import random
import re

import pytest
from django.urls import URLPattern, get_resolver, reverse

from annotation.models import Draft, ItemStatus, Stage
from annotation.selectors import draft_for
from annotation.services import EXPLICIT_SAVE, draft_discard, draft_save, page_stamp

from ..workflow_support import graph_post, make_items, rewrite_post

pytestmark = pytest.mark.django_db


def _save(item, user, text: str, page: int, seq: int):
    return draft_save(item_id=item.pk, user=user, stage=Stage.REWRITE, base_version=item.version,
                      data={"question": text}, page=page, seq=seq)


def _stored(item, user) -> str | None:
    draft = draft_for(user=user, item=item, stage=Stage.REWRITE)
    return draft.data["question"] if draft else None


def test_whatever_order_saves_arrive_in_the_newest_is_the_draft(annotator):
    """Two pages (the second shown after a reload), three saves each: every arrival order ends with the newest."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    first, second = page_stamp(), page_stamp() + 1
    saves = [(first, 1), (first, 2), (first, 3), (second, 1), (second, 2), (second, 3)]
    orders = list(itertools.permutations(saves))
    for order in random.Random(7).sample(orders, 60):
        Draft.objects.all().delete()
        kept = [_save(item, annotator, f"{page}/{seq}", page, seq) is not None for page, seq in order]
        assert _stored(item, annotator) == f"{second}/3", order
        # A save is kept exactly when it is newer than every save that arrived before it.
        assert kept == [key == max(order[:i + 1]) for i, key in enumerate(order)], order


def test_a_late_autosave_does_not_bring_back_a_draft_whose_work_was_saved(annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    shown = page_stamp()
    assert _save(item, annotator, "typed", shown, 1) is not None
    draft_discard(item_id=item.pk, user=annotator, stage=Stage.REWRITE)  # Save: the work is in the item now
    assert _stored(item, annotator) is None
    # The page's next autosave, sent before Save and arriving after it: not kept.
    assert _save(item, annotator, "typed, and a bit more", shown, 2) is None
    assert _stored(item, annotator) is None
    # The page shown after Save (the redirect) saves as usual.
    assert _save(item, annotator, "after the save", page_stamp(), 1) is not None
    assert _stored(item, annotator) == "after the save"


def test_a_save_the_annotator_asked_for_comes_after_every_autosave_of_its_page(annotator):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    shown = page_stamp()
    assert _save(item, annotator, "refused Save, kept", shown, EXPLICIT_SAVE) is not None
    assert _save(item, annotator, "an autosave on its way", shown, 41) is None
    assert _stored(item, annotator) == "refused Save, kept"


def test_saves_without_an_order_are_kept_only_over_each_other(annotator, annotator2):
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    assert _save(item, annotator, "a", 0, 0) is not None and _save(item, annotator, "b", 0, 0) is not None
    assert _stored(item, annotator) == "b"
    assert _save(item, annotator, "c", page_stamp(), 1) is not None
    assert _save(item, annotator, "d", 0, 0) is None and _stored(item, annotator) == "c"
    # Drafts are per user: another annotator's order is their own.
    assert _save(item, annotator2, "e", 0, 0) is not None and _stored(item, annotator) == "c"


def test_a_save_with_no_draft_before_it_still_stops_a_late_autosave(annotator):
    """Nothing was autosaved before Save (or the row went with an older version of the app): Save keeps its moment
    all the same, and the page's autosave that was on its way is dropped."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    shown = page_stamp()
    draft_discard(item_id=item.pk, user=annotator, stage=Stage.REWRITE)
    assert _save(item, annotator, "sent before Save", shown, 1) is None
    assert _stored(item, annotator) is None


def test_a_save_the_annotator_asked_for_is_kept_even_from_an_older_page(annotator):
    """Tab B was shown later and its work saved; tab A's Save is refused (a conflict) and its text is kept as the
    draft all the same, after what is stored, so that the conflict page can show it."""
    (item,) = make_items(1, status=ItemStatus.REWRITE)
    tab_a, tab_b = page_stamp(), page_stamp() + 1
    assert _save(item, annotator, "B's text", tab_b, 1) is not None
    draft_discard(item_id=item.pk, user=annotator, stage=Stage.REWRITE)
    assert _save(item, annotator, "A's refused Save", tab_a, EXPLICIT_SAVE) is not None
    assert _stored(item, annotator) == "A's refused Save"
    assert _save(item, annotator, "A's autosave on its way", tab_a, 7) is None


EDITING = (ItemStatus.REWRITE, ItemStatus.CLUE_GRAPH)


def _item_routes() -> list[str]:
    resolver = get_resolver()
    names = []
    for pattern in resolver.url_patterns:
        if getattr(pattern, "namespace", None) != "annotation":
            continue
        for inner in pattern.url_patterns:
            if isinstance(inner, URLPattern) and inner.name and set(inner.pattern.converters) == {"pk"}:
                names.append(f"annotation:{inner.name}")
    return names


def _autosaves(client, items) -> dict[str, tuple[str, object]]:
    """{autosave address: (the page it was found on, the item)} over every item page that carries a stamp."""
    found = {}
    for item in items:
        for name in _item_routes():
            response = client.get(reverse(name, args=[item.pk]))
            page = response.content.decode() if response.status_code == 200 else ""
            for form in re.findall(r"<form\b.*?</form>", page, re.S):
                if 'name="draft_page"' in form:
                    for url in re.findall(r'hx-post="([^"]+)"', form):
                        found[html.unescape(url)] = (name, item)
    return found


def test_every_autosave_keeps_only_a_save_at_least_as_new_as_the_stored_draft(annotator_client, annotator):
    items = [make_items(1, status=status, start=n)[0] for n, status in enumerate(EDITING, start=1)]
    autosaves = _autosaves(annotator_client, items)
    assert {name for name, _ in autosaves.values()} == {"annotation:rewrite", "annotation:clue_graph"}
    assert {url.rsplit("/", 2)[-2] for url in autosaves} >= {"draft", "preview", "edit"}, autosaves
    for url, (page, item) in sorted(autosaves.items()):
        Draft.objects.all().delete()
        data = rewrite_post(item, item.version) if page == "annotation:rewrite" else {**graph_post(item),
                                                                                     "action": "add_clue"}
        newer = annotator_client.post(url, {**data, "draft_page": 2_000, "draft_seq": 1}, HTTP_HX_REQUEST="true")
        assert newer.status_code == 200 and "Not kept as a draft" not in newer.content.decode(), url
        kept = Draft.objects.get(item=item, user=annotator)
        assert (kept.page, kept.seq) == (2_000, 1), url
        for stamp, seq in ((1_000, 9), (2_000, 0)):  # an older page; an earlier save of the same page
            late = annotator_client.post(url, {**data, "draft_page": stamp, "draft_seq": seq},
                                         HTTP_HX_REQUEST="true")
            assert "Not kept as a draft" in late.content.decode(), (url, stamp, seq)
            assert Draft.objects.get(pk=kept.pk).updated_at == kept.updated_at, (url, stamp, seq)


# A clue graph is stored as the official texts: a row holding the format's own marks would read back as another graph.

HAZARDS = {
    "an arrow in a clue": ({"text": "the glass lay inside -> broken from outside", "implication": "an outsider"}, None),
    "a line break in a clue": ({"text": "the glass\nAfter correlating these clues:", "implication": "x"}, None),
    "a carriage return in an implication": ({"text": "the glass", "implication": "broken\rfrom outside"}, None),
    "a leading number in a clue": ({"text": "2. the glass lay inside", "implication": "broken from outside"}, None),
    "an arrow in a conclusion": (None, {"inputs": ["broken from outside"], "output": "Z -> W"}),
    "' + ' inside an input": (None, {"inputs": ["the maid + the butler"], "output": "two of them"}),
    "a line break in a conclusion": (None, {"inputs": ["broken from outside"], "output": "Z\n1. Q -> R"}),
}


@pytest.mark.parametrize("hazard", sorted(HAZARDS))
def test_a_clue_graph_row_holding_the_format_s_marks_is_refused_naming_it_with_nothing_written(annotator, hazard):
    from rest_framework.test import APIClient

    from annotation.models import Item

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    clue, step = HAZARDS[hazard]
    payload = {"base_version": item.version,
               "clues": [{"text": "muddy boots stood by the desk", "implication": "someone came from the garden"},
                         *([clue] if clue else [])],
               "steps": [{"inputs": ["someone came from the garden"], "output": "The gardener"},
                         *([step] if step else [])]}
    api = APIClient()
    api.force_authenticate(annotator)
    refused = api.post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json")
    assert refused.status_code == 400, (hazard, refused.content)
    body = refused.json()
    field = "clues" if clue else "steps"
    text = str(body)
    assert field in text and ("Clue 2" if clue else "Step S2") in text, body
    after = Item.objects.get(pk=item.pk)
    assert (after.version, after.evidence, after.reasoning) == (item.version, item.evidence, item.reasoning)
    # Without the hazard the same graph is stored and reads back as given.
    payload["clues"], payload["steps"] = payload["clues"][:1], payload["steps"][:1]
    assert api.post(f"/api/annotation/items/{item.pk}/clue-graph/", payload, format="json").status_code == 200


def test_an_arrow_inside_an_implication_reads_back_as_given_and_is_kept(annotator):
    """A clue splits at its first arrow: a later one stays in the implication, stored and read back as given."""
    from rest_framework.test import APIClient

    from annotation.clue_graph.editing import editable_graph
    from annotation.models import Item

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    api = APIClient()
    api.force_authenticate(annotator)
    clue = ("the glass lay inside", "broken -> from outside")
    saved = api.post(f"/api/annotation/items/{item.pk}/clue-graph/", {
        "base_version": item.version, "clues": [{"text": clue[0], "implication": clue[1]}],
        "steps": [{"inputs": [clue[0]], "output": "The gardener"}]}, format="json")
    assert saved.status_code == 200, saved.content
    stored = Item.objects.get(pk=item.pk)
    assert editable_graph(stored.evidence, stored.reasoning).clues == [clue]


def test_every_real_item_s_clue_graph_reads_back_as_itself(detectbench_dir):
    """The check refuses nothing the data holds: each of the 1,563 items' graphs, written back unchanged, passes."""
    import json

    from annotation.clue_graph.editing import editable_graph
    from annotation.services.editing import written_as_given

    checked = 0
    for split in ("test", "train"):
        for line in (detectbench_dir / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            graph = editable_graph(record.get("evidence", ""), record.get("multi_hop_reasoning", ""))
            written_as_given(graph, *graph.texts())
            checked += 1
    assert checked >= 1500


# Who may change an item in an editing stage: the holders of its slots (an edit takes a free one), through every door.

def _edit_doors(item, user):
    """Each way an item's content is changed in its stage, as `user`: (name, call) pairs; each call raises a refusal
    or returns an HTTP status (2xx/3xx taken)."""
    from django.urls import reverse

    from annotation.models import Item
    from annotation.services import clue_graph_replace, item_edit, item_revert

    from ..workflow_support import api_for, client_for, graph_post, rewrite_post

    stage = item.status

    def changed_graph(now):
        data = graph_post(now)
        data["clue_implication"] = [f"{data['clue_implication'][0]} again", *data["clue_implication"][1:]]
        return data

    def fresh():
        return Item.objects.get(pk=item.pk)

    doors = [
        ("item_edit", lambda: item_edit(item_id=item.pk, base_version=fresh().version, user=user, stage=stage,
                                        changes={"question": fresh().question + " Really?"})),
        ("item_revert", lambda: item_revert(item_id=item.pk, revision_number=1, base_version=fresh().version,
                                            user=user)),
        ("revert page", lambda: client_for(user).post(reverse("annotation:revert", args=[item.pk]), {
            "revision": 1, "base_version": fresh().version}).status_code),
    ]
    if stage == ItemStatus.REWRITE:
        doors.append(("rewrite page", lambda: client_for(user).post(
            reverse("annotation:rewrite", args=[item.pk]),
            rewrite_post(fresh(), fresh().version, question="Who came in?")).status_code))
    else:
        doors += [
            ("clue_graph_replace", lambda: clue_graph_replace(item_id=item.pk, base_version=fresh().version, user=user,
                                                              clues=[("muddy boots", "a visitor")],
                                                              steps=[(["a visitor"], "The gardener")])),
            ("clue-graph page", lambda: client_for(user).post(reverse("annotation:clue_graph", args=[item.pk]),
                                                              changed_graph(fresh())).status_code),
            ("clue-graph API", lambda: api_for(user).post(f"/api/annotation/items/{item.pk}/clue-graph/", {
                "base_version": fresh().version, "clues": [{"text": "muddy boots", "implication": "a visitor"}],
                "steps": [{"inputs": ["a visitor"], "output": "The gardener"}]}, format="json").status_code),
        ]
    return doors


@pytest.mark.parametrize("stage", [ItemStatus.REWRITE, ItemStatus.CLUE_GRAPH])
def test_an_edit_by_someone_without_the_stage_s_slot_is_refused_through_every_door(stage, annotator, annotator2):
    """k = 1 and annotator holds the slot: annotator2's edit is refused with nothing written, whatever the door
    (service, page, API, revert); annotator's own edits go through, and a free slot is taken by the edit."""

    from annotation.errors import WorkflowError
    from annotation.models import AnnotatorLease, Item, ItemRevision
    from annotation.services import lease_next

    from ..workflow_support import make_items, set_k

    set_k(Stage(stage), 1)
    item = make_items(1, status=stage, source=f"s{stage}")[0]
    # A revision 1 exists (the import's); another edit makes revert meaningful.
    assert lease_next(user=annotator, stage=stage) is not None
    for name, door in _edit_doors(item, annotator2):
        before = (Item.objects.get(pk=item.pk).version, ItemRevision.objects.filter(item=item).count())
        try:
            outcome = door()
        except WorkflowError:
            outcome = "refused"
        after = (Item.objects.get(pk=item.pk).version, ItemRevision.objects.filter(item=item).count())
        assert after == before, f"{name}: written by someone without the slot"
        assert outcome == "refused" or outcome in (302, 400, 409) and name.endswith(("page", "API")), (name, outcome)
        if name.endswith("API"):
            assert outcome == 409, name
    doors = _edit_doors(item, annotator)
    for name, door in doors:
        if "revert" in name:
            doors[0][1]()  # an edit to revert
        before = Item.objects.get(pk=item.pk).version
        outcome = door()
        assert Item.objects.get(pk=item.pk).version > before, (name, outcome)
    # Released, the slot is free: the next edit takes it.
    AnnotatorLease.objects.filter(item=item).update(status="released")
    (name, door) = _edit_doors(item, annotator2)[0]
    door()
    assert AnnotatorLease.objects.filter(item=item, annotator=annotator2, status="leased").exists()


def test_someone_who_wrote_the_clue_graph_does_not_review_it_lease_or_no_lease(annotator, annotator2, researcher):
    """annotator2 edits the clue graph in a slot of its own, never finishes, and the slot is released; annotator
    finishes the stage. annotator2 may not take the review (they wrote the graph); a third person may."""
    from django.utils import timezone

    from annotation.errors import NoSlot
    from annotation.models import AnnotatorLease
    from annotation.services import clue_graph_replace, lease_next, stage_submit

    from ..workflow_support import make_items, set_k

    set_k(Stage.CLUE_GRAPH, 2)
    set_k(Stage.REVIEW, 1)
    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH, source="sr")
    item = clue_graph_replace(item_id=item.pk, base_version=item.version, user=annotator2,
                              clues=[("muddy boots", "a visitor")], steps=[(["a visitor"], "The gardener")])
    AnnotatorLease.objects.filter(item=item, annotator=annotator2).update(status="released")
    set_k(Stage.CLUE_GRAPH, 1)
    item = stage_submit(item_id=item.pk, user=annotator, stage=Stage.CLUE_GRAPH, item_version=item.version)
    assert item.status == ItemStatus.REVIEW
    from annotation.services.leases import locked_item, stage_config, take_slot

    with pytest.raises(NoSlot, match="clue graph they built"):
        take_slot(item=locked_item(item.pk), stage=Stage.REVIEW, user=annotator2, now=timezone.now(),
                  config=stage_config(Stage.REVIEW))
    assert lease_next(user=annotator2, stage=Stage.REVIEW) is None  # the queue does not offer it either
    assert lease_next(user=researcher, stage=Stage.REVIEW).item_id == item.pk


@pytest.mark.parametrize("status", [ItemStatus.PUBLISHED, ItemStatus.REJECTED, ItemStatus.VERIFICATION,
                                    ItemStatus.REVIEW])
def test_an_item_outside_the_editing_stages_is_reverted_by_a_researcher_only(status, annotator, researcher):
    from annotation.errors import WorkflowError
    from annotation.models import Item
    from annotation.services import item_revert, item_update

    from ..workflow_support import make_items

    (item,) = make_items(1, status=status, source=f"rv{status}")
    edited = item_update(item_id=item.pk, base_version=item.version, changes={"question": "Who came in?"})
    with pytest.raises(WorkflowError, match="only a researcher reverts it"):
        item_revert(item_id=item.pk, revision_number=1, base_version=edited.version, user=annotator)
    assert Item.objects.get(pk=item.pk).question == "Who came in?"
    reverted = item_revert(item_id=item.pk, revision_number=1, base_version=edited.version, user=researcher)
    assert reverted.question == item.question and reverted.status == status


# -- Every way to an item's content, discovered from the source ------------------------------------------------------
# The doors test above walks the doors known today. This one reads every module of the apps: a content edit is a call
# of item_update with changes (the one function that writes an item's content as a revision), and each one must sit
# in a function that asks editable_item first (the stage, the version, the slot), unless it is a path of the system's
# or of a researcher's, named here with the reason. Nothing else creates a revision or updates items' rows in bulk.

CONTENT_WRITER = "item_update"
GUARD = "editable_item"
#: The modules that write items' rows and revisions themselves (the import, the versioned update, the stage moves).
ROW_WRITERS = {"annotation/services/items.py", "annotation/services/leases.py"}
#: Content edits that are not an annotator's work in a stage: (module, function) -> why no slot is asked.
UNGUARDED = {
    ("annotation/admin.py", "save_model"): "the admin: staff only (researchers), versioned by item_update",
    ("annotation/management/commands/load_sample_data.py", "handle"): "make run's set-up (the system), not a user",
}


def _call_name(call) -> str:
    import ast

    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


def _unguarded_content_edits(relative: str, source: str) -> list[str]:
    """`module:line: function` for each content edit (item_update with changes other than a literal {}) in a function
    that does not call editable_item before it."""
    import ast

    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
        guarded_from = min((call.lineno for call in calls if _call_name(call) == GUARD), default=None)
        for call in calls:
            if _call_name(call) != CONTENT_WRITER:
                continue
            changes = next((kw.value for kw in call.keywords if kw.arg == "changes"), None)
            if isinstance(changes, ast.Dict) and not changes.keys:
                continue  # a status move, no content
            if guarded_from is not None and guarded_from <= call.lineno:
                continue
            if (relative, function.name) in UNGUARDED:
                continue
            found.append(f"{relative}:{call.lineno}: {function.name} edits content without {GUARD}")
    return found


def _row_writes(relative: str, source: str) -> list[str]:
    """Revisions created, or items' rows updated in bulk, outside ROW_WRITERS."""
    import ast

    if relative in ROW_WRITERS:
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        text = ast.unparse(node.func)
        if text == "ItemRevision" or text.startswith("ItemRevision.objects.") and text.endswith(("create", "bulk_create")):
            found.append(f"{relative}:{node.lineno}: {text}(...)")
        elif text.startswith("Item.objects.") and text.endswith((".update", ".bulk_update", "bulk_create")):
            found.append(f"{relative}:{node.lineno}: {text}(...)")
    return found


def _app_sources():
    from tests.conftest import REPO_DIR
    from tests.project.test_csv_exports import APP_PACKAGES

    for package in APP_PACKAGES:
        for path in sorted((REPO_DIR / package).rglob("*.py")):
            relative = path.relative_to(REPO_DIR).as_posix()
            if "/migrations/" not in relative:
                yield relative, path.read_text(encoding="utf-8")


def test_every_content_edit_in_the_source_asks_for_the_stage_s_slot_first():
    sources = dict(_app_sources())
    edits = [line for relative, source in sources.items() for line in _unguarded_content_edits(relative, source)]
    assert not edits, "\n".join(edits)
    rows = [line for relative, source in sources.items() for line in _row_writes(relative, source)]
    assert not rows, "items' rows or revisions written outside " + ", ".join(sorted(ROW_WRITERS)) + ":\n" + "\n".join(rows)
    # The reading finds the edits it guards: the services' own, and every exception still exists (a renamed one
    # would leave a stale pass).
    guarded = {(relative, function) for relative, source in sources.items()
               for function in ("item_edit", "item_revert") if f"def {function}(" in source and GUARD in source}
    assert guarded == {("annotation/services/editing.py", "item_edit"), ("annotation/services/editing.py", "item_revert")}
    for (relative, function), why in UNGUARDED.items():
        assert f"def {function}(" in sources[relative] and CONTENT_WRITER in sources[relative], (relative, function, why)


def test_the_source_check_finds_an_edit_without_the_slot_and_a_stray_revision():
    door = ("def sneaky_view(request, item):\n"
            "    item_update(item_id=item.pk, base_version=item.version, changes={'question': 'x'}, user=request.user)\n"
            "def late_guard(item, user):\n"
            "    item_update(item_id=item.pk, base_version=1, changes=dict(question='y'), user=user)\n"
            "    editable_item(item_id=item.pk, base_version=1, stage='rewrite', user=user)\n"
            "def status_only(item):\n"
            "    item_update(item_id=item.pk, base_version=1, changes={}, status='review')\n")
    assert _unguarded_content_edits("x/views.py", door) == [
        "x/views.py:2: sneaky_view edits content without editable_item",
        "x/views.py:4: late_guard edits content without editable_item"]
    stray = "def f(item):\n    ItemRevision.objects.create(item=item)\n    Item.objects.filter(pk=1).update(question='q')\n"
    assert _row_writes("x/services.py", stray) == ["x/services.py:2: ItemRevision.objects.create(...)",
                                                   "x/services.py:3: Item.objects.filter(pk=1).update(...)"]
    assert _row_writes("annotation/services/items.py", stray) == []
