"""Item versions: every result row records the item version it saw; a row of an item rewritten since is stale,
marked on the run page, left out of the leaderboard's cells and of comparisons with newer runs."""
import pytest
from django.urls import reverse

from annotation.models import Item
from annotation.services import item_update
from evaluation.models import Result
from evaluation.selectors import runs as selectors
from evaluation.selectors.comparison import run_comparison
from evaluation.selectors.leaderboard import leaderboard
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = pytest.mark.django_db

ITEMS = 12


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=ITEMS)
    return list(Item.objects.filter(split="test").order_by("pk"))


def _launch(model, **kwargs):
    return services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method="naive", split="test",
                               enqueue=False, **kwargs)


def _rewrite(item: Item) -> Item:
    return item_update(item_id=item.pk, base_version=item.version, changes={"context": item.context + " It rained."})


def test_rows_record_the_version_they_saw_and_turn_stale_after_a_rewrite(items, compute, researcher_client):
    old = compute(_launch("first-option"))
    assert set(Result.objects.filter(run=old).values_list("item_version", flat=True)) == {1}
    changed = _rewrite(items[3])
    assert changed.version == 2
    new = compute(_launch("lexical"))
    versions = dict(Result.objects.filter(run=new).values_list("item_id", "item_version"))
    assert versions[changed.pk] == 2 and {v for pk, v in versions.items() if pk != changed.pk} == {1}

    assert selectors.run_summary(run=old).stale == 1 and selectors.run_summary(run=new).stale == 0
    stale_rows = list(selectors.run_results(run=old, status="stale"))
    assert [r.item_id for r in stale_rows] == [changed.pk]
    page = researcher_client.get(reverse("evaluation:run_detail", args=[old.pk])).content.decode()
    assert page.count(">stale</span>") == 1 and "Stale rows" in page
    drill = researcher_client.get(reverse("evaluation:result_detail", args=[old.pk, stale_rows[0].pk]))
    assert "now at content version 2" in drill.content.decode()

    # A comparison pairs (item, version): the rewritten item is no pair; each side drops one.
    comparison = run_comparison(a=old, b=new)
    assert comparison.paired.n == ITEMS - 1
    assert (comparison.paired.ref_only, comparison.paired.other_only) == (1, 1)
    assert changed.pk not in {d.item_id for d in comparison.differing}

    # The leaderboard counts fresh rows only, says how many it dropped, and pairs on the rest.
    table = leaderboard(split="test", reference=f"naive@{old.endpoint.name}")
    cells = {c.run.pk: c for c in table.cells}
    assert (cells[old.pk].metrics.n, cells[old.pk].counts.stale) == (ITEMS - 1, 1)
    assert (cells[new.pk].metrics.n, cells[new.pk].counts.stale) == (ITEMS, 0)
    assert cells[new.pk].paired.n == ITEMS - 1 and cells[new.pk].paired.dropped == 1
    assert cells[new.pk].as_json()["pairs_dropped"] == [0, 1]


@pytest.mark.django_db(transaction=True)  # two writes: the upsert's staging table empties on commit
def test_a_resumed_row_of_a_rewritten_item_records_the_new_version(items, compute):
    run = compute(_launch("first-option"))
    target = Result.objects.get(run=run, item=items[0])
    Result.objects.filter(pk=target.pk).update(error="timeout")  # a failed row is computed again on resume
    _rewrite(items[0])
    compute(run)
    target.refresh_from_db()
    assert (target.error, target.item_version) == ("", 2)
    assert Result.objects.filter(run=run).count() == ITEMS


def test_curation_without_content_changes_makes_nothing_stale_and_a_content_change_names_its_field(
        items, compute, researcher_client, researcher):
    """The lifecycle of issue 18: runs, then every item queued for curation and some published with their content
    unchanged: nothing is stale; then three items' content changes: exactly those three are stale."""
    from annotation.services.leases import items_enter_workflow

    first, lexical = compute(_launch("first-option")), compute(_launch("lexical"))
    assert items_enter_workflow(user=researcher, split="test") == ITEMS
    for item in Item.objects.filter(split="test")[:4]:
        item_update(item_id=item.pk, base_version=item.version, changes={}, status="published", note="published")
    assert all(i.version >= 2 and i.content_version == 1 for i in Item.objects.filter(split="test"))
    for run in (first, lexical):
        assert selectors.run_summary(run=run).stale == 0
    table = leaderboard(split="test", reference=f"naive@{first.endpoint.name}")
    assert {c.run.pk: (c.metrics.n, c.counts.stale) for c in table.cells} == {
        first.pk: (ITEMS, 0), lexical.pk: (ITEMS, 0)}

    changed = [_rewrite(Item.objects.get(pk=items[i].pk)) for i in (1, 5, 9)]
    assert all(c.content_version == 2 for c in changed)
    assert selectors.run_summary(run=first).stale == 3
    assert sorted(r.item_id for r in selectors.run_results(run=first, status="stale")) == [c.pk for c in changed]
    table = leaderboard(split="test", reference=f"naive@{first.endpoint.name}")
    assert {c.run.pk: (c.metrics.n, c.counts.stale) for c in table.cells} == {
        first.pk: (ITEMS - 3, 3), lexical.pk: (ITEMS - 3, 3)}
    stale_row = Result.objects.get(run=first, item=changed[0])
    page = researcher_client.get(reverse("evaluation:result_detail", args=[first.pk, stale_row.pk])).content.decode()
    assert "context" in page and "content version 2" in page


def _reject(item: Item) -> Item:
    return item_update(item_id=item.pk, base_version=item.version, changes={}, status="rejected", note="deleted")


@pytest.mark.parametrize(("samples", "curation"), [(1, "stale"), (2, "stale"), (1, "rejected"), (2, "both")])
def test_a_run_with_stale_rows_shows_its_accuracy_on_the_current_content_alike_everywhere(
        items, compute, researcher_client, samples, curation):
    """The plain accuracy counts every row of the run; beside it, wherever a run's accuracy is shown (the run page,
    the run list and its CSV/JSON, the run API, `evaluate`'s line), the accuracy on the items' current content:
    the fresh rows of the items kept (a rejected item's rows left out too), as the leaderboard's cell counts them,
    with the same interval."""
    import csv
    import io
    import json

    from evaluation.statistics.metrics import summarize

    run = compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin="random"), method="naive",
                                      split="test", enqueue=False, samples=samples))
    clean = selectors.run_summary(run=run)
    assert clean.fresh is None and clean.as_json()["accuracy_fresh"] == clean.metrics.accuracy
    changed = {_rewrite(items[i]).pk for i in (0, 4, 7)} if curation in ("stale", "both") else set()
    if curation in ("rejected", "both"):
        changed |= {_reject(Item.objects.get(pk=items[i].pk)).pk for i in (1, 4, 9)}
    summary = selectors.run_summary(run=run)
    assert summary.stale == (3 if curation != "rejected" else 0) * samples and summary.metrics.n == ITEMS * samples
    rows = selectors._row_scores([run.pk])[run.pk]
    expected = summarize([r for r in rows if r.item_id not in changed])
    assert summary.fresh.as_dict() == pytest.approx(expected.as_dict())
    detail = summary.as_json()
    assert detail["n_fresh"] == (ITEMS - len(changed)) * samples and detail["accuracy_fresh"] == expected.accuracy
    assert detail["accuracy_fresh_ci95"] == pytest.approx([expected.ci_low, expected.ci_high])

    table = leaderboard(split="test", reference=f"naive@{run.endpoint.name}")
    (cell,) = [c for c in table.cells if c.run.pk == run.pk]
    assert (cell.metrics.n, cell.metrics.accuracy) == (expected.n, expected.accuracy)

    (listed,) = [r for r in selectors.run_list() if r.pk == run.pk]
    keys = ("n", "accuracy", "stale_rows", "n_fresh", "accuracy_fresh")
    assert {k: listed.summary.as_json()[k] for k in keys} == pytest.approx({k: detail[k] for k in keys})
    assert listed.summary.as_json()["accuracy_fresh_ci95"] == pytest.approx(detail["accuracy_fresh_ci95"])
    exported = json.loads(researcher_client.get(reverse("evaluation:run_list_export", args=["json"])).content)
    assert exported[0]["accuracy_fresh"] == pytest.approx(expected.accuracy)
    line = next(csv.DictReader(io.StringIO(
        researcher_client.get(reverse("evaluation:run_list_export", args=["csv"])).content.decode())))
    assert float(line["accuracy_fresh"]) == pytest.approx(expected.accuracy)
    assert line["accuracy_fresh_ci95"] == f"{expected.ci_low:.6f}-{expected.ci_high:.6f}"
    assert int(line["n_fresh"]) == expected.n
    api = researcher_client.get(f"/api/evaluation/runs/{run.pk}/").json()["metrics"]
    assert (api["n_fresh"], api["accuracy_fresh"]) == (expected.n, expected.accuracy)

    page = researcher_client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    fresh_cell = page.split('id="accuracy-fresh"', 1)[1].split("</div>", 1)[0]
    assert f"{expected.correct}/{expected.n}" in fresh_cell
    assert f"{len(changed) * samples} rows left out (stale, or of deleted items)" in fresh_cell
    listing = researcher_client.get(reverse("evaluation:run_list")).content.decode()
    assert f"on the current content {100 * expected.accuracy:.1f}%" in listing
