"""The evaluation services over a curation lifecycle (runs, judge, curation, judge again, resume, refresh, subset run):
every figure stays like for like. A stale result is judged at the version it was asked, never at the item's new
content; a refresh asks the changed items again and keeps the old rows whole; a subset run never takes a whole-split
run's leaderboard cell; rejected (deleted) items are never asked by a new run or a resume and are left out of the
tables, said so."""
import pytest
from django.db.models import F

from annotation.models import BeliefLabel, Item
from annotation.services import item_update
from evaluation.models import Result, RunStatus, SupersededResult
from evaluation.selectors.judge import free_text_accuracy
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import judge as judge_services
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db(transaction=True)


def _judge(run):
    config = judge_services.judge_config_builtin()
    judge_run = judge_services.judge_run_launch(config=config, run=run, enqueue=False)
    return judge_services.judge_run_execute_in_process(judge_run=judge_run)


def _edit(item_id, **changes):
    item = Item.objects.get(pk=item_id)
    return item_update(item_id=item_id, base_version=item.version, changes=changes, note="curated")


def _reject(item_id):
    item = Item.objects.get(pk=item_id)
    return item_update(item_id=item_id, base_version=item.version, changes={}, status="rejected", note="rejected")


def _run(method="naive", **selection):
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method=method, enqueue=False,
                              **{"split": "test", **selection})
    services.run_execute_in_process(run=run)
    run.refresh_from_db()
    return run


def _labels_match_their_results(run) -> None:
    """Every free-text label of the run's results is at the content version its result was asked."""
    asked = {f"result:{pk}": v for pk, v in Result.objects.filter(run=run).values_list("pk", "item_version")}
    labels = list(BeliefLabel.objects.filter(target__in=list(asked)).values_list("target", "item_version"))
    assert labels and all(version == asked[target] for target, version in labels)


def test_curation_then_judge_resume_refresh_and_a_subset_run_keep_every_figure_like_for_like(free_text_run):
    items = list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))
    naive = _run()
    _judge(free_text_run)
    judged = free_text_accuracy(run=free_text_run)[0]
    labels_before = BeliefLabel.objects.count()
    changed, rejected = items[:2], items[2]
    gold = Item.objects.get(pk=changed[0])
    _edit(changed[0], answer_index=(gold.answer_index + 1) % len(gold.options))  # the gold corrected
    _edit(changed[1], question=Item.objects.get(pk=changed[1]).question + " Who, really?")
    _reject(rejected)

    # Judging again: the two stale results are judged already, at the version their answers answered.
    _judge(free_text_run)
    assert BeliefLabel.objects.count() == labels_before
    _labels_match_their_results(free_text_run)
    again = free_text_accuracy(run=free_text_run)[0]
    assert (again.correct, again.counted, again.pending) == (judged.correct, judged.counted, judged.pending)

    # The table: the naive cell counts fresh rows of items not deleted, and says what it left out.
    table = leaderboard(split="test")
    cell = next(c for c in table.cells if c.run.pk == naive.pk)
    assert (cell.metrics.n, cell.counts.stale, table.rejected_items) == (len(items) - 3, 2, 1)
    assert "1 deleted item(s) left out" in table.scope

    # A resume re-asks nothing (the rows are the run's answers); a refresh asks the changed items again.
    assert services.missing_item_ids(naive) == []
    old = {r.pk: (r.item_id, r.item_version, r.raw_output) for r in Result.objects.filter(run=naive, item_id__in=changed)}
    naive, superseded = services.run_refresh(run=naive, enqueue=False)
    assert superseded == 2 and naive.status == RunStatus.QUEUED
    services.run_execute_in_process(run=naive)
    naive.refresh_from_db()
    assert naive.status == RunStatus.FINISHED
    assert not Result.objects.filter(run=naive).exclude(item_version=F("item__content_version")).exists()
    kept = {s.result_id: (s.item_id, s.item_version, s.row["raw_output"])
            for s in SupersededResult.objects.filter(run=naive)}
    assert kept == old and all(v == 1 for _, v, _ in kept.values())
    assert Result.objects.filter(run=naive).count() == len(items)  # one row per (item, sample), as before

    # A re-run of just the changed items never takes the whole-split cell.
    subset = _run(ids=changed)
    assert sorted(subset.item_ids) == sorted(changed)
    table = leaderboard(split="test")
    cell = next(c for c in table.cells if c.run.method == "naive")
    assert cell.run.pk == naive.pk
    assert (cell.metrics.n, cell.counts.stale) == (len(items) - 1, 0)

    # The free-text run refreshed: its new rows are judged afresh, at their own version; the old labels stay.
    free_text_run, superseded = services.run_refresh(run=free_text_run, enqueue=False)
    services.run_execute_in_process(run=free_text_run)
    assert superseded == 2
    assert free_text_accuracy(run=free_text_run)[0].pending == 2
    _judge(free_text_run)
    _labels_match_their_results(free_text_run)
    assert free_text_accuracy(run=free_text_run)[0].pending == 0
    assert BeliefLabel.objects.count() == labels_before + 2


def test_rejected_items_are_never_asked_by_a_launch_or_a_resume(sample_items):
    first, second = sample_items[0].pk, sample_items[1].pk
    _reject(first)
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              enqueue=False)
    assert first not in run.item_ids and run.left_out_ids == [first]
    _reject(second)  # deleted while the run waits: a resume leaves it out
    run = services.run_resume(run=run, enqueue=False)
    assert second not in run.item_ids and run.left_out_ids == [first, second]
    services.run_execute_in_process(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    assert not Result.objects.filter(run=run, item_id__in=[first, second]).exists()
    assert Result.objects.filter(run=run).count() == len(sample_items) - 2
    asked = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                                item_status="rejected", enqueue=False)
    assert asked.item_ids == [first, second] and asked.left_out_ids == []  # asked for by name: taken


def test_a_revert_makes_the_rows_asked_at_that_content_current_again(free_text_run):
    """An edit makes a run's row stale; reverting it gives the item its earlier content version back: the row is
    current again, the leaderboard counts it, a refresh has nothing to ask and the judge nothing to judge again."""
    from annotation.services import item_revert
    from evaluation.selectors.runs import result_detail

    items = list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))
    naive = _run()
    _judge(free_text_run)
    labels_before = BeliefLabel.objects.count()
    edited = _edit(items[0], question=Item.objects.get(pk=items[0]).question + " Who, really?")
    assert edited.content_version == 2
    cell = next(c for c in leaderboard(split="test").cells if c.run.pk == naive.pk)
    assert (cell.metrics.n, cell.counts.stale) == (len(items) - 1, 1)
    reverted = item_revert(item_id=items[0], revision_number=1, base_version=edited.version)
    assert (reverted.version, reverted.content_version) == (3, 1)
    cell = next(c for c in leaderboard(split="test").cells if c.run.pk == naive.pk)
    assert (cell.metrics.n, cell.counts.stale) == (len(items), 0)
    row = Result.objects.get(run=naive, item_id=items[0])
    detail = result_detail(run=naive, pk=row.pk)
    assert detail["stale"] is False and detail["content_changes"] == []
    naive, superseded = services.run_refresh(run=naive, enqueue=False)
    assert superseded == 0 and not SupersededResult.objects.exists()
    _judge(free_text_run)
    assert BeliefLabel.objects.count() == labels_before
    _labels_match_their_results(free_text_run)


def test_rows_asked_at_a_content_a_revert_left_are_stale_in_every_figure(sample_items):
    """The other way round: a row asked at version 2, the item then reverted to version 1. Every reader counts it
    stale: the row counts and the leaderboard (SQL), the outcomes of paired tests and the common items."""
    from annotation.services import item_revert
    from evaluation.selectors.aggregates import FRESH, row_counts
    from evaluation.selectors.outcomes import common_item_ids, run_outcomes

    first = sample_items[0]
    edited = _edit(first.pk, question=first.question + " Really?")
    run = _run()
    reverted = item_revert(item_id=first.pk, revision_number=1, base_version=edited.version)
    assert (reverted.content_version, reverted.highest_content_version) == (1, 2)
    assert Result.objects.filter(run=run).exclude(FRESH).count() == 1
    assert row_counts(run_ids=[run.pk])[run.pk].stale == 1
    cell = next(c for c in leaderboard(split="test").cells if c.run.pk == run.pk)
    assert (cell.counts.stale, cell.metrics.n) == (1, len(sample_items) - 1)
    assert not [key for key in run_outcomes([run])[run.pk] if key[0] == first.pk]
    assert first.pk not in common_item_ids([run])
