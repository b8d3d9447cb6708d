"""evaluation.selectors.baselines: the leaderboard's first-option and random-guess rows take the item as the unit.

Over random tables (how many methods per column, samples per run, items per run and the option order all drawn),
each baseline cell's n is the number of the column's items, never more than the items there are, however many
methods and samples were run; its value is still the share of the column's rows; and the first option's interval is
`metrics.item_wilson` over the column's items (the cells' own interval), never narrower than Wilson's on the items.
Before, n was the column's rows summed over its cells (3 methods x 1,214 items + 23 = 3,665 on the test split) and the
interval Wilson's on them, about sqrt(3) too narrow."""
from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models import F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from annotation.models import Item
from evaluation.models import Result
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from evaluation.statistics.metrics import item_wilson
from tests.evaluation.conftest import compute_rows
from tests.support.items import import_items

pytestmark = pytest.mark.django_db

ITEMS = 12
MODELS = ("first-option", "random", "lexical")
METHODS = ("naive", "self-cot", "ps-cot")


@pytest.fixture
def split_items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=ITEMS)
    return list(Item.objects.filter(split="test").order_by("pk").values_list("pk", flat=True))


def _column(runs) -> dict[int, tuple[int, int, float]]:
    """Each item's (rows, rows with the correct option first, sum of 1 / options) over the runs' fresh scored
    multiple-choice rows, straight from the rows."""
    out: dict[int, list] = {}
    rows = (Result.objects.filter(run__in=runs, error="", is_correct__isnull=False,
                                  item_version=F("item__content_version"))
            .values_list("item_id", "answer_first", "item__options"))
    for item_id, first, options in rows:
        found = out.setdefault(item_id, [0, 0, 0.0])
        found[0] += 1
        found[1] += bool(first)
        found[2] += 1 / len(options)
    return {k: tuple(v) for k, v in out.items()}


column_plan = st.fixed_dictionaries({
    "methods": st.lists(st.sampled_from(METHODS), min_size=1, max_size=3, unique=True),
    "samples": st.lists(st.integers(1, 3), min_size=3, max_size=3),
    "limits": st.lists(st.integers(3, ITEMS), min_size=3, max_size=3),
})


@settings(max_examples=25, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(models=st.lists(st.sampled_from(MODELS), min_size=1, max_size=2, unique=True),
       plans=st.lists(column_plan, min_size=2, max_size=2),
       order=st.sampled_from(["original", "permuted", "circular"]))
def test_a_baseline_cells_n_is_its_columns_items_and_its_interval_is_item_wilson(split_items, models, plans, order):
    with transaction.atomic():  # each example on its own (rolled back): only its runs fill the table
        for model, plan in zip(models, plans):
            endpoint = services.endpoint_for_cli(builtin=model)
            for method, samples, limit in zip(plan["methods"], plan["samples"], plan["limits"]):
                compute_rows(services.run_launch(endpoint=endpoint, method=method, split="test", samples=samples,
                                                 limit=limit, option_order=order, enqueue=False))
        table = leaderboard(split="test", option_order=order)
        rows = {b.key: b for b in table.baselines}
        assert len(table.endpoints) == len(models)
        for position, endpoint in enumerate(table.endpoints):
            runs = [c.run for c in table.cells if c.endpoint.pk == endpoint.pk]
            items = _column(runs)
            total = sum(r for r, _, _ in items.values())
            first, chance = rows["first-option"].cells[position], rows["random"].cells[position]
            # n: the column's items, never more than there are, whatever the methods and samples.
            assert first.n == chance.n == len(items) <= len(split_items)
            assert total >= first.n  # ... while the rows are as many as the runs made
            # The value: the share of the column's rows, as before.
            assert first.value == pytest.approx(sum(f for _, f, _ in items.values()) / total)
            assert chance.value == pytest.approx(sum(c for _, _, c in items.values()) / total)
            # The interval: item_wilson over the column's items, never narrower than Wilson's on the items.
            expected = item_wilson([f for _, f, _ in items.values()], [r for r, _, _ in items.values()])
            assert (first.low, first.high) == pytest.approx(expected)
            if first.low is not None:
                wilson_items = proportion_confint(first.value * first.n, first.n, method="wilson")
                assert first.low <= first.value <= first.high
                assert first.high - first.low >= wilson_items[1] - wilson_items[0] - 1e-9
            assert chance.low is None and chance.items is None
            json_cell = table.as_json()["baselines"][0]["cells"][position]
            assert json_cell["n"] == first.n and json_cell["endpoint"] == endpoint.name
        transaction.set_rollback(True)
