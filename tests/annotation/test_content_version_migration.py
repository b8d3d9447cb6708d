"""The data migrations of content versions (annotation 0008, evaluation 0009, studies 0006) on a database built at the
migrations before them: an item queued, published, rewritten and queued again; results and judge labels recorded at
its old item versions are re-pinned to the content version they saw, and no unique key breaks."""
import pytest

from tests.support.migrations import migrate_to, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("annotation", "0007_one_open_lease_per_stage"), ("evaluation", "0008_endpoint_version"),
          ("studies", "0005_attempt_ends_without_start")]
AFTER = [("annotation", "0009_alter_belieflabel_item_version"), ("evaluation", "0010_alter_result_item_version"),
         ("studies", "0007_alter_response_item_version")]


def test_rows_at_old_item_versions_are_re_pinned_to_the_content_they_saw():
    apps = migrate_to(BEFORE)
    try:
        Item, Revision = apps.get_model("annotation", "Item"), apps.get_model("annotation", "ItemRevision")
        a, b = {"context": "A"}, {"context": "B"}
        item = Item.objects.create(source="s", external_id="1", split="test", context="B", question="q?",
                                   options=["x", "y"], answer_index=0, question_type="other", version=5)
        # r1 import (A), r2 queued (A), r3 published (A), r4 rewrite (B), r5 queued again (B)
        for number, snapshot, fields in [(1, a, ["context"]), (2, a, ["status"]), (3, a, ["status"]),
                                         (4, b, ["context"]), (5, b, ["status"])]:
            Revision.objects.create(item=item, number=number, stage="imported", snapshot=snapshot,
                                    changed_fields=fields, note="imported from f" if number == 1 else "")
        Endpoint = apps.get_model("evaluation", "ModelEndpoint")
        Run, Result = apps.get_model("evaluation", "Run"), apps.get_model("evaluation", "Result")
        endpoint = Endpoint.objects.create(name="e", kind="builtin", model="random")
        runs = [Run.objects.create(endpoint=endpoint, method="naive", item_ids=[item.pk]) for _ in range(5)]
        for run, version in zip(runs, (1, 2, 3, 4, 5)):
            Result.objects.create(run=run, item=item, item_version=version)
        Queue = apps.get_model("annotation", "BeliefQueue")
        Label = apps.get_model("annotation", "BeliefLabel")
        queue = Queue.objects.create(name="q")
        for version in (2, 3):  # judged twice while only the status changed: both saw content 1
            Label.objects.create(queue=queue, item=item, item_version=version, task="free-text", target="t",
                                 aspect="verdict", label="correct", belief=0.9, belief_source="builtin",
                                 status="scored")

        apps = migrate_to(AFTER)
        Item, Result = apps.get_model("annotation", "Item"), apps.get_model("evaluation", "Result")
        Label = apps.get_model("annotation", "BeliefLabel")
        item = Item.objects.get(pk=item.pk)
        assert (item.version, item.content_version) == (5, 2)
        assert sorted(Result.objects.values_list("item_version", flat=True)) == [1, 1, 1, 2, 2]
        # The two labels cannot both be content 1 (unique key): the first moves, the other keeps its number.
        assert sorted(Label.objects.values_list("item_version", flat=True)) == [1, 3]
    finally:
        migrate_to(AFTER)
        migrate_to_latest()
