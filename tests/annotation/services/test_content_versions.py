"""Content versions name contents: a revert, a re-import over an edit, an edit undone by hand give the item its
earlier content's version back; a new content gets a version above every one the item had. Checked as properties
over random histories of edits, reverts, status moves and re-imports, then case by case."""
from __future__ import annotations

import json
import random

import pytest

from annotation.models import CONTENT_FIELDS, Item, ItemRevision
from annotation.selectors import content_changes_since
from annotation.selectors.versions import item_contents_at
from annotation.services import item_revert, item_update
from annotation.services.content_versions import content_key
from annotation.services.items import IMPORT_NOTES, curated_since_import
from tests.support.items import import_text

pytestmark = pytest.mark.django_db

QUESTIONS = ("Who took the key?", "Who really took the key?", "Which guest took the key?")


def _record(question: str = QUESTIONS[0], answer: int = 1) -> str:
    return json.dumps({"id": 7, "context": "The maid, the cook and the butler were in the house. " * 3,
                       "question": question, "options": ["The maid", "The cook", "The butler", "Nobody"],
                       "answer": answer, "clue_graph": {"evidence": "the cook had the key -> the cook",
                                                        "multi_hop_reasoning": "the cook -> The cook."}})


def _item() -> Item:
    import_text(_record(), source="cv")
    return Item.objects.get(source="cv")


def _check_invariants(item: Item) -> None:
    item.refresh_from_db()
    revisions = list(ItemRevision.objects.filter(item=item).order_by("number"))
    by_key: dict[str, set[int]] = {}
    by_version: dict[int, set[str]] = {}
    for revision in revisions:
        key = content_key(revision.snapshot)
        by_key.setdefault(key, set()).add(revision.content_version)
        by_version.setdefault(revision.content_version, set()).add(key)
    # One version is one content, and one content is one version.
    assert all(len(keys) == 1 for keys in by_version.values()), by_version
    assert all(len(versions) == 1 for versions in by_key.values()), by_key
    assert item.content_version <= item.version and revisions[-1].content_version == item.content_version
    assert item.highest_content_version == max(by_version)  # rows may be stale whenever it is above 1
    assert by_key[content_key(item.content())] == {item.content_version}
    # Every version reads back as its own content.
    contents = item_contents_at([(item.pk, version) for version in by_version])
    for version, (key,) in by_version.items():
        assert content_key(contents[(item.pk, version)]) == key


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_keep_one_version_per_content(seed):
    rng = random.Random(seed)
    item = _item()
    for _ in range(25):
        item.refresh_from_db()
        step = rng.choice(["edit", "edit", "revert", "status", "import"])
        if step == "edit":
            changes = {"question": rng.choice(QUESTIONS), "answer_index": rng.choice([1, 2])}
            item_update(item_id=item.pk, base_version=item.version, changes=changes, note="edit")
        elif step == "revert":
            number = rng.randint(1, item.version)
            item_revert(item_id=item.pk, revision_number=number, base_version=item.version)
        elif step == "status":
            item_update(item_id=item.pk, base_version=item.version, changes={},
                        status=rng.choice(["verification", "clue_graph", "imported"]), note="moved")
        else:
            import_text(_record(rng.choice(QUESTIONS), rng.choice([1, 2])), source="cv", curated="overwrite")
        _check_invariants(item)
    assert Item.objects.get(pk=item.pk).version > 10


def test_a_revert_takes_the_earlier_version_back_and_a_new_content_a_new_one():
    item = _item()
    assert item.content_version == 1
    edited = item_update(item_id=item.pk, base_version=item.version, changes={"question": QUESTIONS[1]})
    assert edited.content_version == 2 and len(content_changes_since(item=edited, content_version=1)) == 1
    reverted = item_revert(item_id=item.pk, revision_number=1, base_version=edited.version)
    assert (reverted.version, reverted.content_version) == (3, 1)
    assert content_changes_since(item=reverted, content_version=1) == []
    # The rows of version 2 name what changed since their content: the revert.
    [change] = content_changes_since(item=reverted, content_version=2)
    assert (change["revision"], change["content_version"], change["note"]) == (3, 1, "reverted to revision 1")
    # A content the item never had: above every version (not 2 again, which names another content).
    third = item_update(item_id=item.pk, base_version=reverted.version, changes={"question": QUESTIONS[2]})
    assert third.content_version == 3
    # Undone by hand, not by a revert: the same.
    again = item_update(item_id=item.pk, base_version=third.version, changes={"question": QUESTIONS[1]})
    assert again.content_version == 2
    # A status move keeps the content version.
    moved = item_update(item_id=item.pk, base_version=again.version, changes={}, status="verification")
    assert (moved.version, moved.content_version) == (again.version + 1, 2)


def test_an_edit_undone_is_not_curated_and_a_re_import_over_it_changes_nothing():
    item = _item()
    edited = item_update(item_id=item.pk, base_version=item.version, changes={"question": QUESTIONS[1]})
    assert curated_since_import([edited]).keys() == {item.pk}
    reverted = item_revert(item_id=item.pk, revision_number=1, base_version=edited.version)
    assert curated_since_import([reverted]) == {}
    report = import_text(_record(), source="cv")  # the default policy refuses to overwrite curated items
    assert (report.unchanged, report.updated, report.conflicts) == (1, 0, [])
    # Curated again, then the file's own new content overwrites it: a new version (the file's content is new).
    item.refresh_from_db()
    item_update(item_id=item.pk, base_version=item.version, changes={"question": QUESTIONS[1]})
    import_text(_record(QUESTIONS[2]), source="cv", curated="overwrite")
    item.refresh_from_db()
    assert (item.question, item.content_version) == (QUESTIONS[2], 3)
    # Re-importing the first file's content over it: version 1 again, and not curated (it is an import).
    import_text(_record(), source="cv", curated="overwrite")
    item.refresh_from_db()
    assert item.content_version == 1 and curated_since_import([item]) == {}


def test_a_content_before_this_rule_keeps_its_separate_version():
    """An item reverted before (two versions with one content): a later return to that content takes the
    highest of them; nothing is renumbered."""
    item = _item()
    item_update(item_id=item.pk, base_version=item.version, changes={"question": QUESTIONS[1]})
    item.refresh_from_db()
    # As the old rule left it: the revert at a version of its own (3, the content of 1).
    Item.objects.filter(pk=item.pk).update(question=QUESTIONS[0], version=3, content_version=3)
    item.refresh_from_db()
    ItemRevision.objects.create(item=item, number=3, content_version=3, snapshot=item.content(), stage=item.status,
                                changed_fields=["question"], note="reverted to revision 1")
    edited = item_update(item_id=item.pk, base_version=3, changes={"question": QUESTIONS[2]})
    assert edited.content_version == 4
    back = item_update(item_id=item.pk, base_version=edited.version, changes={"question": QUESTIONS[0]})
    assert back.content_version == 3
    assert set(CONTENT_FIELDS) >= {"question", "answer_index"}


def test_the_changes_since_a_version_no_revision_records_are_those_above_it():
    item = _item()
    first = item_update(item_id=item.pk, base_version=item.version, changes={"question": QUESTIONS[1]})
    second = item_update(item_id=item.pk, base_version=first.version, changes={"question": QUESTIONS[2]})
    ItemRevision.objects.filter(item=item, content_version=2).update(content_version=9)  # a history without 2
    changes = content_changes_since(item=second, content_version=2)
    assert [(c["revision"], c["content_version"]) for c in changes] == [(2, 9), (3, 3)]


def test_a_version_written_outside_the_services_is_never_given_to_another_content():
    """The row says content version 3 (changed outside the services: no revision at 3, highest left at 1): a new
    content is 4, not 3 again, so rows at 3 stay stale."""
    item = _item()
    Item.objects.filter(pk=item.pk).update(version=3, content_version=3, question=QUESTIONS[1])
    edited = item_update(item_id=item.pk, base_version=3, changes={"question": QUESTIONS[2]})
    assert (edited.content_version, edited.highest_content_version) == (4, 4)


@pytest.mark.parametrize("seed", range(6))
def test_a_curated_item_is_named_by_the_last_revision_that_changed_its_content_never_a_status_move(seed,
                                                                                                  django_user_model):
    """Over random histories of edits, reverts and status moves by several people and re-imports: an item is curated
    exactly when its content is not its last import's, and the revision named is the last one after that import
    whose content differs from the revision before it (a status move by someone else after an edit names the edit)."""
    rng = random.Random(seed)
    people = [django_user_model.objects.create_user(username=f"person{n}", is_superuser=True) for n in range(3)]
    item = _item()
    for _ in range(20):
        item.refresh_from_db()
        step, who = rng.choice(["edit", "edit", "revert", "status", "status", "import"]), rng.choice(people)
        if step == "edit":
            changes = {"question": rng.choice(QUESTIONS), "answer_index": rng.choice([1, 2])}
            item_update(item_id=item.pk, base_version=item.version, changes=changes, user=who, note="edit")
        elif step == "revert":  # by a researcher, who may revert an item in any status
            item_revert(item_id=item.pk, revision_number=rng.randint(1, item.version), base_version=item.version,
                        user=who if item.status not in ("clue_graph", "rewrite") else None)
        elif step == "status":
            item_update(item_id=item.pk, base_version=item.version, changes={}, user=who,
                        status=rng.choice(["verification", "clue_graph", "imported"]), note="moved")
        else:
            import_text(_record(rng.choice(QUESTIONS), rng.choice([1, 2])), source="cv", curated="overwrite")
        item.refresh_from_db()
        revisions = list(ItemRevision.objects.filter(item=item).order_by("number"))
        imports = [n for n, r in enumerate(revisions) if r.note.startswith(IMPORT_NOTES)]
        start = imports[-1] if imports else 0
        imported_version = revisions[imports[-1]].content_version if imports else 1
        changed = [r for n, r in enumerate(revisions) if n > start and n > 0
                   and r.content_version != revisions[n - 1].content_version]
        found = curated_since_import([item])
        if item.content_version == imported_version:
            assert found == {}
        else:
            assert found.keys() == {item.pk} and found[item.pk].number == changed[-1].number, (
                [(r.number, r.content_version, r.note) for r in revisions], found[item.pk].number)
