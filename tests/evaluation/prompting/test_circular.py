"""Circular option order (MMBench CircularEval): rotations, the verdict per (item, sample), exact resume,
the `evaluate --option-order` flag, on the real test split against a built-in and a stand-in server."""
import io
import json
import time
from contextlib import redirect_stderr

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count

from annotation.models import Item
from evaluation.model_calls.builtin_models import read_prompt
from evaluation.models import Result, Run, RunStatus
from evaluation.prompting.circular import circular_accuracy, present_rotated, rotation_order, slot, split_slot
from evaluation.prompting.prompts import ItemView
from evaluation.selectors import analysis
from evaluation.services import runs as services
from tests.support.items import import_items
from tests.support.model_server import ModelServer

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = ItemView(id=7, context="c", question="q?", options=("a", "b", "c", "d"), answer_index=2)


def test_each_rotation_shows_every_option_first_once_and_keeps_the_answer():
    orders = [rotation_order(4, r) for r in range(4)]
    assert orders == [(0, 1, 2, 3), (1, 2, 3, 0), (2, 3, 0, 1), (3, 0, 1, 2)]
    assert sorted(o[0] for o in orders) == [0, 1, 2, 3]
    shown = [present_rotated(ITEM, rotation=r) for r in range(4)]
    assert [s.answer_shown for s in shown] == [2, 1, 0, 3]
    assert all(s.options[s.answer_shown] == "c" for s in shown)
    assert present_rotated(ITEM, rotation=5).order == rotation_order(4, 1)  # fewer options than rotations: wraps
    assert present_rotated(ITEM, rotation=1, label_style="letters").options_block.startswith("A. b\nB. c")


def test_rows_encode_sample_and_rotation_and_the_verdict_needs_every_rotation():
    assert [split_slot(slot(s, r, 4), 4) for s in range(3) for r in range(4)] == [
        (s, r) for s in range(3) for r in range(4)]
    rows = [(1, i, True) for i in range(4)]  # item 1: right in every rotation
    rows += [(2, i, i != 2) for i in range(4)]  # item 2: wrong once
    rows += [(3, 0, True), (3, 1, True), (3, 2, None), (3, 3, True)]  # item 3: a failed request
    rows += [(4, 0, True)]  # item 4: three rotations not computed yet
    rows += [(1, 4 + i, i < 3) for i in range(4)]  # item 1, sample 1: wrong once
    result = circular_accuracy(rows, rotations=4)
    assert (result.n, result.correct, result.incomplete) == (3, 1, 2)
    assert result.accuracy == pytest.approx(1 / 3)
    assert (result.plain_n, result.plain_correct) == (16, 14)


def _evaluate(*args) -> list[dict]:
    out = io.StringIO()
    with redirect_stderr(io.StringIO()):
        call_command("evaluate", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def correct_answer(items: list[Item]):
    """A responder that always answers right: it finds the item and the rotation shown from the prompt (exact
    option lists, so an item whose correct text is also a wrong option is still answered by its position)."""
    by_prompt = {(i.context.strip(), i.question.strip()): i for i in items}

    def respond(body: dict) -> str:
        context, question, shown = read_prompt(body["messages"])
        item = by_prompt[(context.strip(), question.strip())]
        options, texts = item.options, [text.strip() for _, text in shown]
        rotation = next(r for r in range(len(options))
                        if [options[(p + r) % len(options)].strip() for p in range(len(options))] == texts)
        label, text = shown[(item.answer_index - rotation) % len(options)]
        # The label with its text: where options are numbers (items 48, 757, 2131, 3605, 3789), a rotated
        # bare "1" may also be another option's text, and the answer reader rightly calls it ambiguous.
        return f"### Key Information:\n{context.split('.')[0]}\n\n### Answer:\n{label} ({text})"

    return respond


def test_circular_on_the_real_test_split_first_option_scores_0_and_an_always_right_server_1(detectbench_dir):
    """The issue's check. Always-first is right in exactly one rotation of every item: circular 0, plain 1/4."""
    assert import_items(detectbench_dir / "test.jsonl", split="test") == 1196
    (first,) = _evaluate("--builtin", "first-option", "--method", "naive", "--split", "test", "--wait",
                         "--option-order", "circular")
    assert (first["option_order"], first["rotations"]) == ("circular", 4)
    assert (first["circular_n"], first["circular_correct"], first["circular_accuracy"]) == (1196, 0, 0.0)
    assert (first["n"], first["errors"], first["first_option_baseline"]) == (4 * 1196, 0, 0.25)
    run = Run.objects.get(pk=first["run"])
    assert run.status == RunStatus.FINISHED and run.total == 4 * 1196
    rows = Result.objects.filter(run=run)
    assert not rows.values("item_id", "sample_index").annotate(c=Count("pk")).filter(c__gt=1).exists()
    for row in rows.order_by("?")[:50]:
        assert tuple(row.shown_order) == rotation_order(4, row.sample_index % 4)
    # Right exactly in the rotation that shows the answer first, unless its bare "1" is ambiguous (an item
    # whose options are numbers, e.g. 757: rotated, "1" is also another option's text).
    parsed = rows.filter(parse_status="ok")
    assert all(row.answer_index == row.sample_index % 4 for row in parsed.only("answer_index", "sample_index"))
    assert first["correct"] == parsed.filter(answer_first=True).count() >= 1196 - 12
    assert first["accuracy"] == pytest.approx(first["correct"] / 4784)

    items = list(Item.objects.filter(split="test"))
    with ModelServer(responder=correct_answer(items)) as server:
        endpoint = services.endpoint_create(name="always right", base_url=server.base_url, model="oracle",
                                            max_concurrency=32, use_cache=False)
        (right,) = _evaluate("--base-url", server.base_url, "--model", "oracle", "--split", "test", "--wait",
                             "--in-process", "--option-order", "circular", "--concurrency", "32",
                             "--no-preflight")  # the oracle answers item prompts only, not the preflight's
        assert server.stats.requests == 4 * 1196
    assert Run.objects.get(pk=right["run"]).endpoint.base_url == endpoint.base_url
    assert (right["circular_n"], right["circular_correct"], right["circular_accuracy"]) == (1196, 1196, 1.0)
    assert right["accuracy"] == 1.0 and right["parse_failures"] == 0


@pytest.fixture
def items(detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=30)
    return list(Item.objects.filter(split="test").order_by("pk"))


def endpoint_for(server, **fields):
    return services.endpoint_create(name=f"stand-in {time.time_ns()}", base_url=server.base_url, model="stand-in",
                                    max_concurrency=8, **fields)


def test_circular_resume_computes_only_the_missing_rotations(items):
    with ModelServer(responder=correct_answer(items), rate_500=0.3, seed=3) as server:
        endpoint = endpoint_for(server, max_attempts=1, use_cache=False)
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", option_order="circular",
                                  samples=2, enqueue=False)
        assert (run.rotations, run.rows_per_item, run.total) == (4, 8, 8 * len(items))
        services.run_execute_in_process(run=run)
        failed = set(Result.objects.filter(run=run).exclude(error="").values_list("item_id", "sample_index"))
        before = analysis.run_circular_accuracy(run=run)
        assert len(failed) > 5 and before.incomplete > 0 and before.correct == before.n
        deleted = {(items[0].pk, 5), (items[0].pk, 6)}  # as if never computed (a crash)
        Result.objects.filter(run=run, item_id=items[0].pk, sample_index__in=[5, 6]).delete()
        server.configure(rate_500=0.0)
        server.reset()
        services.run_resume(run=run, enqueue=False)
        services.run_execute_in_process(run=run)
        assert server.stats.requests == len(failed | deleted)  # only these rotations were asked again
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and Result.objects.filter(run=run).count() == run.total
    after = analysis.run_circular_accuracy(run=run)
    assert (after.n, after.correct, after.incomplete) == (2 * len(items), 2 * len(items), 0)


def test_rotation_0_reuses_the_cached_original_order_and_samples_share_their_sampling_key(items):
    with ModelServer(reply_mode="first") as server:
        endpoint = endpoint_for(server)
        original = services.run_launch(endpoint=endpoint, method="naive", split="test", limit=10, enqueue=False)
        services.run_execute_in_process(run=original)
        circular = services.run_launch(endpoint=endpoint, method="naive", split="test", limit=10, enqueue=False,
                                       option_order="circular")
        services.run_execute_in_process(run=circular)
        assert server.stats.requests == 10 + 30  # rotation 0 is the original order: from the cache
    assert Result.objects.filter(run=circular, cached=True).count() == 10
    assert set(Result.objects.filter(run=circular, cached=True).values_list("sample_index", flat=True)) == {0}


def test_permute_options_stays_a_synonym_and_contradictions_are_refused(items):
    (permuted,) = _evaluate("--builtin", "first-option", "--split", "test", "--wait", "--permute-options")
    (same,) = _evaluate("--builtin", "first-option", "--split", "test", "--wait", "--option-order", "permuted")
    assert permuted["option_order"] == same["option_order"] == "permuted" and permuted["accuracy"] == same["accuracy"]
    assert "circular_accuracy" not in permuted
    with pytest.raises(CommandError, match="permuted"):
        _evaluate("--builtin", "first-option", "--split", "test", "--permute-options", "--option-order", "circular")
