"""evaluation.services.superseding over random curation histories: after every refresh a run has one row per (item,
sample) at the item's current content; no answer is ever lost (each id is a row or a superseded row); an answer the
run gave at an item's current content comes back, whole and with its id, instead of the item being asked again; so a
refresh asks exactly the pairs that have no answer at their current content."""
from __future__ import annotations

import random

import pytest

from annotation.models import Item
from annotation.services import item_revert, item_update
from evaluation.models import Result, SupersededResult
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION_ENDS = (" Who, really?", " Which one?", " Think again.")


def _row(result: Result) -> dict:
    return {f.attname: getattr(result, f.attname) for f in Result._meta.concrete_fields if f.attname != "updated_at"}


@pytest.mark.parametrize("seed", range(3))
def test_refreshes_over_edits_and_reverts_ask_only_what_has_no_answer_at_its_current_content(sample_items, seed):
    rng = random.Random(seed)
    items = [item.pk for item in sample_items[:4]]
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              ids=items, samples=2, enqueue=False)
    services.run_execute_in_process(run=run)
    seen = set(Result.objects.filter(run=run).values_list("pk", flat=True))
    originals = {item: Item.objects.get(pk=item).question for item in items}
    restored_total = 0
    for _ in range(8):
        for item_id in rng.sample(items, rng.randint(1, 3)):
            item = Item.objects.get(pk=item_id)
            if rng.random() < 0.5 and item.version > 1:  # back to an earlier revision (its content version again)
                item_revert(item_id=item_id, revision_number=rng.randint(1, item.version - 1), base_version=item.version)
            else:
                item_update(item_id=item_id, base_version=item.version, note="curated",
                            changes={"question": originals[item_id] + rng.choice(QUESTION_ENDS)})
        current = dict(Item.objects.filter(pk__in=items).values_list("pk", "content_version"))
        kept = {}  # (item, sample) -> the newest kept answer at the item's current content
        for old in SupersededResult.objects.filter(run=run).order_by("superseded_at", "pk"):
            if old.item_version == current[old.item_id] and not old.row["error"]:
                kept[(old.item_id, old.sample_index)] = old.row
        rows = {(r.item_id, r.sample_index): r for r in Result.objects.filter(run=run)}
        stale = {pair for pair, r in rows.items() if r.item_version != current[pair[0]]}
        expected_back = {pair: kept[pair] for pair in stale if pair in kept}
        expected_asked = len(stale) - len(expected_back)

        run, superseded = services.run_refresh(run=run, enqueue=False)
        assert superseded == len(stale)
        for (item_id, sample), row in expected_back.items():  # back whole, with its id
            back = Result.objects.get(run=run, item_id=item_id, sample_index=sample)
            assert back.pk == row["id"]
            assert {k: v for k, v in _row(back).items() if k != "created_at"} == {
                k: Result._meta.get_field(k).to_python(v) for k, v in row.items() if k not in ("created_at", "updated_at")}
            assert back.created_at.isoformat().replace("+00:00", "Z")[:19] == str(row["created_at"])[:19]
            assert back.item_version == current[item_id] and back.is_correct == row["is_correct"]
        restored_total += len(expected_back)
        before = set(Result.objects.filter(run=run).values_list("pk", flat=True))
        services.run_execute_in_process(run=run)
        after = set(Result.objects.filter(run=run).values_list("pk", flat=True))
        assert len(after - before) == expected_asked, (len(after - before), expected_asked, stale, expected_back)
        seen |= after
        # One row per (item, sample), each at its item's current content; nothing lost.
        now = list(Result.objects.filter(run=run).values_list("item_id", "sample_index", "item_version"))
        assert sorted((i, s) for i, s, _ in now) == sorted((i, s) for i in items for s in range(2))
        assert all(version == current[i] for i, _, version in now)
        kept_ids = set(SupersededResult.objects.filter(run=run).values_list("result_id", flat=True))
        assert seen <= after | kept_ids and not (after & kept_ids)
    assert restored_total > 0  # the histories did bring answers back
