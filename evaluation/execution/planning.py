"""Planning a run's jobs: the items as shown (their seeded or rotated option orders) with their demonstrations, for
(item, sample index) pairs in batches, so that the first requests need not wait for all of them."""
from __future__ import annotations

from dataclasses import dataclass

from annotation.clue_graph import gold_key_information
from annotation.models import Item, ItemStatus
from evaluation.model_calls.engine import Job
from evaluation.models import OptionOrder, Run
from evaluation.prompting.circular import present_rotated
from evaluation.prompting.methods import get_method
from evaluation.prompting.prompts import ItemView, Presented, demonstration_order, first_demonstrations, present

#: The fields of an item that ``item_view`` and the planner read.
PLANNED_FIELDS = ("id", "context", "question", "options", "answer_index", "evidence", "reasoning", "content_version")


def item_view(item: Item) -> ItemView:
    return ItemView(
        id=item.pk, context=item.context, question=item.question, options=tuple(item.options),
        answer_index=item.answer_index, key_information=tuple(gold_key_information(item.evidence)),
        reasoning=item.reasoning,
    )


def demonstration_pool() -> list[int]:
    """The train items usable as 3-shot demonstrations: not rejected, and with a clue graph (non-empty gold
    key information), since a demonstration shows the key information and the answer."""
    rows = (Item.objects.filter(split="train").exclude(status=ItemStatus.REJECTED).exclude(evidence="")
            .values_list("pk", "evidence"))
    return [pk for pk, evidence in rows if gold_key_information(evidence)]


@dataclass
class JobPlanner:
    """Renders jobs for (item, sample index) pairs in batches, so the first requests need not wait for all of them."""
    run: Run
    method: object
    option_order: str
    pool: list[int]

    @classmethod
    def for_run(cls, run: Run) -> JobPlanner:
        method = get_method(run.method)
        return cls(run=run, method=method, option_order=run.option_order,
                   pool=demonstration_pool() if method.shots else [])

    def __post_init__(self) -> None:
        # The pool in the seed's order, shuffled once (choose_demonstrations' order: each job takes its first ones).
        self._demo_order = demonstration_order(pool_ids=self.pool, seed=self.run.seed) if self.pool else []

    def shown(self, view: ItemView, sample_index: int) -> Presented:
        """The item as shown in this row: its original order, its seeded permutation, or a rotation."""
        run = self.run
        if self.option_order == OptionOrder.CIRCULAR:
            return present_rotated(view, rotation=sample_index % run.rotations, label_style=run.option_labels)
        return present(view, seed=run.seed, permute=self.option_order == OptionOrder.PERMUTED,
                       label_style=run.option_labels)

    def _demos_of(self, item_id: int) -> list[int]:
        return first_demonstrations(self._demo_order, exclude=item_id, shots=self.method.shots)

    def jobs(self, wanted: list[tuple[int, int]]) -> list[Job]:
        run, method = self.run, self.method
        # Demonstrations are permuted with a permuted run, else (original or circular) in their original order.
        permute_demos = self.option_order == OptionOrder.PERMUTED
        circular = self.option_order == OptionOrder.CIRCULAR
        need = sorted({i for i, _ in wanted})
        found = list(Item.objects.filter(pk__in=need).order_by().only(*PLANNED_FIELDS))
        items = {item.pk: item_view(item) for item in found}
        versions = {item.pk: item.content_version for item in found}
        demo_views: dict[int, ItemView] = {}
        if method.shots:
            demo_ids = {d for i in need for d in self._demos_of(i)}
            demo_views = {item.pk: item_view(item)
                          for item in Item.objects.filter(pk__in=demo_ids).order_by().only(*PLANNED_FIELDS)}
        # The samples of an item are shown alike (but for a circular run's rotations): one presentation each, one
        # set of demonstrations per item, not one per row.
        shown: dict[tuple[int, int], Presented] = {}
        demos_by_item: dict[int, tuple[Presented, ...]] = {}
        jobs = []
        for item_id, sample in wanted:
            view = items.get(item_id)
            if view is None:
                continue
            demos = demos_by_item.get(item_id)
            if demos is None:
                demos = demos_by_item[item_id] = tuple(
                    present(demo_views[d], seed=run.seed, permute=permute_demos, label_style=run.option_labels)
                    for d in self._demos_of(item_id)) if method.shots else ()
            key = (item_id, sample % run.rotations if circular else 0)
            if (presented := shown.get(key)) is None:
                presented = shown[key] = self.shown(view, sample)
            # The rotations of one sample share its sampling index (cache and client see sample, not row).
            jobs.append(Job(item_id=item_id, sample_index=sample, shown=presented, demos=demos,
                            sample=sample // run.rotations if circular else None, item_version=versions[item_id]))
        return jobs
