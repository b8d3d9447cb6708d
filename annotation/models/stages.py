"""The one vocabulary of an item's life: the work stages and the statuses around them.

`Stage` lists the stages in which annotators work, in order; each knows the status
that follows it, the screen where it is worked on and the stages redone when an
item is sent back to it. `ItemStatus` is every status an item can have: the stages
plus imported, published and rejected (built from `Stage`, so values and labels are
written once).
"""
from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Stage(models.TextChoices):
    """A stage in which annotators work on an item (paper §3.1), in workflow order."""

    VERIFICATION = "verification", _("Question verification")
    REWRITE = "rewrite", _("Question rewriting")
    CLUE_GRAPH = "clue_graph", _("Clue-graph construction")
    REVIEW = "review", _("Review")

    @property
    def next_status(self) -> ItemStatus:
        """The item's status once the stage is completed: the next stage, or published after review."""
        stages = list(Stage)
        position = stages.index(self)
        return ItemStatus(stages[position + 1].value) if position + 1 < len(stages) else ItemStatus.PUBLISHED

    @property
    def screen(self) -> str:
        """The URL name of the page where an annotator works on an item in this stage (takes the item pk)."""
        return _SCREENS[self]

    @property
    def editing(self) -> bool:
        """The stages whose work is an edit of the item (saved with item_edit, finished with stage_submit)."""
        return self in (Stage.REWRITE, Stage.CLUE_GRAPH)

    def and_later(self) -> list[Stage]:
        """This stage and those after it: the work redone when an item is sent back here."""
        stages = list(Stage)
        return stages[stages.index(self):]

    @classmethod
    def send_back_targets(cls) -> list[Stage]:
        """The stages a reviewer may send an item back to."""
        return [stage for stage in cls if stage is not cls.REVIEW]


_SCREENS = {
    Stage.VERIFICATION: "annotation:verify",
    Stage.REWRITE: "annotation:rewrite",
    Stage.CLUE_GRAPH: "annotation:clue_graph",
    Stage.REVIEW: "annotation:review",
}

ItemStatus = models.TextChoices("ItemStatus", [
    ("IMPORTED", ("imported", _("Imported"))),
    *((stage.name, (stage.value, stage.label)) for stage in Stage),
    ("PUBLISHED", ("published", _("Published"))),
    ("REJECTED", ("rejected", _("Rejected"))),
])
ItemStatus.__doc__ = "Every status of an item: imported, then each Stage, then published or rejected."
ItemStatus.__module__ = __name__


__all__ = ["ItemStatus", "Stage"]
