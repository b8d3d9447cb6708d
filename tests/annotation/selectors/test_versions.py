"""annotation.selectors.versions: an item's content at a content version (the one reader studies and evaluation use)
is the item itself at its current version, else the latest revision snapshot at that version; a version no revision
records is left out, never filled with another version's content."""
import pytest
from django.db.models import F

from annotation.models import Item, ItemRevision
from annotation.selectors.versions import item_contents_at
from annotation.services import item_update
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db


def _edit(item: Item, **changes) -> Item:
    return item_update(item_id=item.pk, base_version=item.version, changes=changes)


def test_each_version_reads_its_own_content_and_an_unknown_version_is_left_out():
    (item,) = make_items(1)
    first = (item.question, item.answer_index, item.options)
    item = item_update(item_id=item.pk, base_version=item.version, changes={}, status="published", note="status only")
    item = _edit(item, question="Who did it?", answer_index=2)
    assert (item.version, item.content_version) == (3, 2)
    found = item_contents_at([(item.pk, 1), (item.pk, 2), (item.pk, 7), (item.pk, None), (item.pk + 999, 1)],
                             fields=("question", "answer_index", "options"))
    assert set(found) == {(item.pk, 1), (item.pk, 2)}
    assert (found[(item.pk, 1)]["question"], found[(item.pk, 1)]["answer_index"], found[(item.pk, 1)]["options"]) \
        == first
    assert found[(item.pk, 2)] == {"question": "Who did it?", "answer_index": 2, "options": item.options}
    assert item_contents_at([(item.pk, None)]) == {}


def test_of_several_revisions_at_one_content_version_the_highest_number_wins():
    """Inserted out of order (the higher number first) with different snapshots: neither the first row stored nor
    the lowest number is the content at that version, the latest revision is."""
    (item,) = make_items(1)
    item = _edit(item, question="Version 2")
    item = _edit(item, question="Version 3")
    base = ItemRevision.objects.get(item=item, number=2).snapshot
    ItemRevision.objects.create(item=item, number=5, content_version=2, stage=item.status,
                                snapshot={**base, "question": "the latest at version 2"})
    ItemRevision.objects.create(item=item, number=4, content_version=2, stage=item.status,
                                snapshot={**base, "question": "an earlier one at version 2"})
    found = item_contents_at([(item.pk, 1), (item.pk, 2), (item.pk, 3)], fields=("question",))
    assert found[(item.pk, 2)] == {"question": "the latest at version 2"}
    assert found[(item.pk, 1)] == {"question": "Who entered the study? (1)"}
    assert found[(item.pk, 3)] == {"question": "Version 3"}


def test_the_current_version_is_the_item_itself_even_unrecorded_or_changed_outside_the_services():
    (item,) = make_items(1)
    item = _edit(item, question="Version 2")
    Item.objects.filter(pk=item.pk).update(question="edited in the admin")  # the revision of version 2 says otherwise
    assert item_contents_at([(item.pk, 2)], fields=("question",)) == {(item.pk, 2): {"question": "edited in the admin"}}
    # A content version no revision records (bumped outside the services): the item is its content.
    Item.objects.filter(pk=item.pk).update(version=F("version") + 1, content_version=F("content_version") + 1)
    found = item_contents_at([(item.pk, 2), (item.pk, 3)], fields=("question",))
    assert found == {(item.pk, 2): {"question": "Version 2"}, (item.pk, 3): {"question": "edited in the admin"}}


def test_loaded_items_are_reused_and_two_queries_read_any_number_of_pairs(django_assert_num_queries):
    items = make_items(3)
    items = [_edit(item, question=f"New {item.pk}") for item in items]
    pairs = [(item.pk, version) for item in items for version in (1, 2)]
    with django_assert_num_queries(2):
        found = item_contents_at(pairs, fields=("question",))
    assert len(found) == 6 and found[(items[0].pk, 2)] == {"question": f"New {items[0].pk}"}
    with django_assert_num_queries(0):
        assert item_contents_at([(items[0].pk, 2)], fields=("question",), current={items[0].pk: items[0]}) \
            == {(items[0].pk, 2): {"question": f"New {items[0].pk}"}}
    with django_assert_num_queries(1):
        assert item_contents_at([(items[0].pk, 1)], fields=("question",), current={items[0].pk: items[0]}) \
            == {(items[0].pk, 1): {"question": "Who entered the study? (1)"}}


def test_every_content_field_by_default_and_a_field_a_snapshot_lacks_is_none():
    (item,) = make_items(1)
    old = Item.objects.get(pk=item.pk).content()
    item = _edit(item, question="Version 2")
    assert item_contents_at([(item.pk, 1)]) == {(item.pk, 1): old}
    ItemRevision.objects.create(item=item, number=9, content_version=1, stage=item.status, snapshot={"answer_index": 3})
    assert item_contents_at([(item.pk, 1)], fields=("answer_index", "translations")) \
        == {(item.pk, 1): {"answer_index": 3, "translations": None}}
