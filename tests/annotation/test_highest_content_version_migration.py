"""Migration annotation 0015 fills Item.highest_content_version from the revisions: an item never changed stays at 1,
one changed has its content version, and one whose history holds a higher version than it has now (taken back to
an earlier content) has that one, so that its rows at the other versions count as stale."""
import pytest

from tests.support.migrations import migrate_to, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("annotation", "0014_content_version_names_content")]
AFTER = [("annotation", "0015_highest_content_version")]


def test_the_highest_content_version_comes_from_the_item_and_its_history():
    apps = migrate_to(BEFORE)
    try:
        Item, Revision = apps.get_model("annotation", "Item"), apps.get_model("annotation", "ItemRevision")

        def item(n: int, content_version: int, history: list[int]):
            made = Item.objects.create(source="s", external_id=str(n), split="test", context="c", question="q?",
                                       options=["x", "y"], answer_index=0, question_type="other",
                                       version=max(len(history), 1), content_version=content_version)
            for number, version in enumerate(history, start=1):
                Revision.objects.create(item=made, number=number, content_version=version, stage="imported",
                                        snapshot={"context": f"c{version}"})
            return made.pk

        untouched, changed, back = item(1, 1, [1]), item(2, 2, [1, 2]), item(3, 1, [1, 2, 3, 1])
        apps = migrate_to(AFTER)
        Item = apps.get_model("annotation", "Item")
        assert dict(Item.objects.values_list("pk", "highest_content_version")) == {untouched: 1, changed: 2, back: 3}
    finally:
        migrate_to_latest()
