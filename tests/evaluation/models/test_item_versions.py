"""evaluation.models.item_versions: an item's content at a content version is the revision snapshot of that version
(not the item's current text), its current version is its current content, and a version no revision records is
not made up."""
import pytest

from annotation.models import Item, ItemRevision
from annotation.services import item_update
from evaluation.models.item_versions import items_at_versions

pytestmark = pytest.mark.django_db


def test_each_version_reads_its_own_content(sample_items):
    item = sample_items[0]
    first = (item.question, item.answer_index, tuple(item.options))
    item = item_update(item_id=item.pk, base_version=item.version, note="status only", changes={}, status="published")
    item = item_update(item_id=item.pk, base_version=item.version,
                       changes={"question": "Who did it?", "answer_index": (item.answer_index + 1) % len(item.options)})
    assert item.content_version == 2
    found = items_at_versions([(item.pk, 1), (item.pk, 2), (item.pk, 7)], current={item.pk: item})
    assert (found[(item.pk, 1)].question, found[(item.pk, 1)].answer_index, found[(item.pk, 1)].options) == first
    now = Item.objects.get(pk=item.pk)
    assert (found[(item.pk, 2)].question, found[(item.pk, 2)].answer_index) == ("Who did it?", now.answer_index)
    assert (item.pk, 7) not in found


def test_a_field_an_old_snapshot_lacks_reads_as_empty(sample_items):
    """Which revision is read is annotation's (tests/annotation/selectors/test_versions.py); here the snapshot
    becomes an ItemAtVersion: a missing text is empty, a missing key is no option."""
    item = sample_items[0]
    item = item_update(item_id=item.pk, base_version=item.version, changes={"question": "Who did it?"})
    ItemRevision.objects.create(item=item, number=item.version + 1, content_version=1, stage=item.status,
                                snapshot={"question": "Old", "options": ["a", "b"]})
    asked = items_at_versions([(item.pk, 1)])[(item.pk, 1)]
    assert (asked.question, asked.options, asked.context, asked.evidence, asked.answer_index, asked.answer_text) \
        == ("Old", ("a", "b"), "", "", -1, "")
