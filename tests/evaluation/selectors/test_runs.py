"""evaluation.selectors.runs: a stale row is shown beside the item as it was asked (options, gold, question), with
the stale notice, on its own page, in the run's row list and in the JSON-lines export; a launch's selection leaves
rejected (deleted) items out unless it asks for them; every output of a run (its page, the API, the run list's
downloads) carries its circular accuracy when its page does."""
import csv
import io
import json
import re

import pytest
from django.urls import reverse

from annotation.models import Item
from annotation.services import item_update
from evaluation.models import Result
from evaluation.selectors import runs as selectors
from evaluation.selectors.comparison import run_comparison
from evaluation.services import runs as services

pytestmark = pytest.mark.django_db(transaction=True)


def _stale_run(sample_items):
    """A run asked at version 1, then the first item's options reordered and gold moved (version 2)."""
    run = services.run_launch(endpoint=services.endpoint_for_cli(builtin="lexical"), method="naive", split="test",
                              enqueue=False)
    services.run_execute_in_process(run=run)
    item = sample_items[0]
    options = list(reversed(item.options))
    item_update(item_id=item.pk, base_version=item.version,
                changes={"options": options, "answer_index": len(options) - 1 - item.answer_index,
                         "question": item.question + " Think again."})
    return run, item, Result.objects.get(run=run, item=item, sample_index=0)


def test_a_stale_row_shows_the_options_and_gold_it_was_asked(sample_items, client, researcher):
    run, asked, result = _stale_run(sample_items)
    detail = selectors.result_detail(run=run, pk=result.pk)
    assert detail["stale"] and not detail["asked_unknown"]
    shown = {o["index"]: o for o in detail["shown"]}
    assert [shown[i]["text"] for i in range(len(asked.options))] == list(asked.options)
    assert [i for i, o in shown.items() if o["correct"]] == [asked.answer_index]
    assert detail["asked"].question == asked.question
    page = selectors.with_gold_as_asked(list(selectors.run_results(run=run)))
    assert {r.item_id: r.gold for r in page} == {r.item_id: Item.objects.get(pk=r.item_id).answer_index
                                                  for r in page if r.item_id != asked.pk} | {asked.pk: asked.answer_index}
    client.force_login(researcher)
    html = client.get(reverse("evaluation:result_detail", args=[run.pk, result.pk])).content.decode()
    assert asked.question in html and "Think again." not in html
    lines = [json.loads(line) for line in
             b"".join(client.get(reverse("evaluation:run_results_jsonl", args=[run.pk])).streaming_content).splitlines()]
    stale = {(r["item_id"], r["item_version"], r["current_version"]) for r in lines if r["stale"]}
    assert stale == {(asked.pk, 1, 2)} and all(r["current_version"] == 1 for r in lines if not r["stale"])


def test_a_comparison_shows_a_stale_pairs_gold_as_asked(sample_items):
    run, asked, _ = _stale_run(sample_items)
    other = services.run_launch(endpoint=services.endpoint_for_cli(builtin="first-option"), method="naive",
                                split="test", enqueue=False)
    Result.objects.bulk_create([Result(**{f.attname: getattr(r, f.attname) for f in Result._meta.concrete_fields
                                          if not f.primary_key} | {"run_id": other.pk, "is_correct": not r.is_correct})
                                for r in Result.objects.filter(run=run)])
    rows = {d.item_id: d for d in run_comparison(a=run, b=other).differing}
    assert rows[asked.pk].stale and rows[asked.pk].gold == asked.answer_index


def test_a_selection_leaves_rejected_items_out_unless_it_asks_for_them(sample_items):
    rejected = sample_items[3]
    item_update(item_id=rejected.pk, base_version=rejected.version, changes={}, status="rejected")
    taken, left_out = selectors.select_items(split="test")
    assert rejected.pk not in taken and left_out == [rejected.pk] and len(taken) == len(sample_items) - 1
    assert selectors.select_items(split="test", limit=2) == ([sample_items[0].pk, sample_items[1].pk], [])
    assert selectors.select_items(split="test", item_status="rejected") == ([rejected.pk], [])


def _page_circular(page: str) -> tuple[float, int, int] | None:
    """The run page's circular accuracy: (percent, items right in every rotation, items), None when not shown."""
    found = re.search(r'<td id="circular-cell">(.*?)</td>', page, re.DOTALL)
    if found is None:
        return None
    text = re.sub(r"<[^>]+>", " ", found.group(1))
    pct, counts = re.search(r"([\d.]+)%", text), re.search(r"\((\d+)/(\d+) items", text)
    return float(pct.group(1)), int(counts.group(1)), int(counts.group(2))


def _number(text):
    return None if text in ("", None) else float(text)


def test_every_run_output_carries_the_circular_accuracy_when_the_run_page_does(sample_items, compute, api,
                                                                              researcher_client):
    """The run page, the run API and every run-list download (discovered: each format the export answers) carry a
    circular run's circular accuracy and its items, equal to the run's leaderboard cell (fresh rows: an item edited
    since is out of both); a run of another order has none of it (empty, never 0)."""
    from evaluation.selectors.leaderboard import leaderboard
    from evaluation.views.tables import CONTENT_TYPES, RUN_LIST_COLUMNS

    def launch(model, method, **kwargs):
        return compute(services.run_launch(endpoint=services.endpoint_for_cli(builtin=model), method=method,
                                           split="test", limit=8, enqueue=False, **kwargs))

    runs = [launch("lexical", "naive", option_order="circular", samples=2),
            launch("random", "naive", option_order="circular"),
            launch("first-option", "naive"), launch("random", "self-cot", option_order="permuted")]
    edited = sample_items[0]
    item_update(item_id=edited.pk, base_version=edited.version, changes={"question": edited.question + " Why?"})
    outputs = {}
    for fmt in CONTENT_TYPES:
        response = researcher_client.get(reverse("evaluation:run_list_export", args=[fmt]))
        if response.status_code == 404:
            continue
        text = response.content.decode()
        rows = json.loads(text) if fmt == "json" else list(csv.DictReader(io.StringIO(text)))
        outputs[f"runs.{fmt}"] = {int(r["run"]): (_number(r.get("circular_accuracy")), _number(r.get("circular_n")))
                                  for r in rows}
        if fmt == "csv":
            assert {"circular_accuracy", "circular_n"} <= set(rows[0]) and list(rows[0])[2:] == RUN_LIST_COLUMNS
            assert all(r["circular_accuracy"] == r["circular_n"] == "" for r in rows
                       if r["option_order"] != "circular")  # empty, never 0
    assert {"runs.csv", "runs.json"} <= set(outputs)
    seen = 0
    for run in runs:
        [cell] = leaderboard(run_ids=[run.pk]).cells
        metrics = api.get(f"/api/evaluation/runs/{run.pk}/").json()["metrics"]
        mine = {"api": (metrics.get("circular_accuracy"), metrics.get("circular_n"))}
        mine |= {name: found[run.pk] for name, found in outputs.items()}
        on_page = _page_circular(researcher_client.get(reverse("evaluation:run_detail", args=[run.pk]))
                                 .content.decode())
        if on_page is None:
            assert cell.circular is None and run.option_order != "circular"
            assert all(value is None and n is None for value, n in mine.values()), (run.option_order, mine)
            continue
        seen += 1
        right, items = cell.circular
        assert items == 7  # the edited item's rows are stale: out, as on the leaderboard
        assert on_page == (pytest.approx(100 * cell.circular_accuracy, abs=0.05), right, items)
        for name, (value, n) in mine.items():
            assert value == pytest.approx(cell.circular_accuracy) and n == items, (name, value, n)
    assert seen == 2
