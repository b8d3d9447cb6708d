"""The one vocabulary of an item's life (annotation.models.stages)."""
from django.urls import reverse

from annotation.models import ItemStatus, Stage


def test_each_stage_knows_the_status_that_follows_it():
    assert [stage.next_status for stage in Stage] == [
        ItemStatus.REWRITE, ItemStatus.CLUE_GRAPH, ItemStatus.REVIEW, ItemStatus.PUBLISHED]


def test_each_stage_has_a_screen_that_takes_an_item():
    screens = {stage: reverse(stage.screen, args=[7]) for stage in Stage}
    assert screens == {Stage.VERIFICATION: "/annotation/items/7/verify/", Stage.REWRITE: "/annotation/items/7/rewrite/",
                       Stage.CLUE_GRAPH: "/annotation/items/7/clue-graph/", Stage.REVIEW: "/annotation/items/7/review/"}


def test_item_statuses_are_the_stages_between_imported_and_published_or_rejected():
    assert ItemStatus.values == ["imported", *Stage.values, "published", "rejected"]
    assert all(ItemStatus(stage).label == stage.label for stage in Stage)  # one label per value, written once


def test_send_back_redoes_the_target_stage_and_the_ones_after_it():
    assert Stage.REWRITE.and_later() == [Stage.REWRITE, Stage.CLUE_GRAPH, Stage.REVIEW]
    assert Stage.send_back_targets() == [Stage.VERIFICATION, Stage.REWRITE, Stage.CLUE_GRAPH]
    assert [stage for stage in Stage if stage.editing] == [Stage.REWRITE, Stage.CLUE_GRAPH]
