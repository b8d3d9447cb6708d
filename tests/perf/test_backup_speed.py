"""Benchmark: export_all and import_all of the real test split (1,196 items) and 23,920 result rows with
the messages a model run stores; the round trip is byte-identical. Prints rows/s, sizes and how much the peak
memory grew."""
import resource
import time

import pytest
from django.core.management import call_command
from django.db import connection

from annotation.models import Item
from detectbench_web.backup import export_all, import_all
from evaluation.models import Result, Run
from evaluation.services import runs as services
from tests.support.items import import_items

pytestmark = [pytest.mark.perf, pytest.mark.django_db]
RUNS, SAMPLES = 10, 2


def _results(run: Run, items: list[Item]) -> list[Result]:
    rows = []
    for item in items:
        for sample in range(SAMPLES):
            prompt = f"{item.context}\n\n{item.question}\n" + "\n".join(item.options)
            output = f"Let me think about option {sample + 1}... Answer: {sample + 1}"
            rows.append(Result(run=run, item=item, sample_index=sample, item_version=item.version,
                               messages=[{"messages": [{"role": "user", "content": prompt}], "output": output}],
                               raw_output=output, shown_order=list(range(len(item.options))),
                               answer_index=sample, answer_label=str(sample + 1), parse_status="ok",
                               is_correct=sample == item.answer_index, tokens_in=len(prompt) // 4, tokens_out=12,
                               latency_s=0.123456, attempts=1))
    return rows


def _measured(work):
    """(value, seconds, growth of the process's peak resident memory in bytes) of work()."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    value = work()
    seconds = time.perf_counter() - started
    return value, seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024


def test_backup_of_a_realistic_database_and_its_restore(detectbench_dir, tmp_path):
    import_items(detectbench_dir / "test.jsonl", split="test")
    items = list(Item.objects.order_by("pk"))
    endpoint = services.endpoint_for_cli(builtin="lexical")
    for n in range(RUNS):
        run = services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False, note=f"r{n}")
        Result.objects.bulk_create(_results(run, items), batch_size=2000)
    rows_expected = Result.objects.count()
    assert rows_expected == RUNS * SAMPLES * len(items) == 23_920

    manifest, export_s, export_peak = _measured(lambda: export_all(out=tmp_path / "a"))
    rows = sum(t["rows"] for t in manifest["tables"])
    size = sum(p.stat().st_size for p in (tmp_path / "a").iterdir())
    with connection.cursor() as cursor:  # foreign-key checks now, so that TRUNCATE may run in this transaction
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    call_command("flush", interactive=False, verbosity=0)  # this test's transaction: an empty database
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    counts, import_s, import_peak = _measured(lambda: import_all(folder=tmp_path / "a"))
    assert counts["evaluation.result"] == rows_expected
    export_all(out=tmp_path / "b")
    same = all((tmp_path / "a" / p.name).read_bytes() == p.read_bytes() for p in (tmp_path / "b").iterdir())
    print(f"\nbackup of {rows:,} rows ({size / 1e6:.1f} MB in {len(manifest['tables'])} files): export_all "
          f"{export_s:.1f} s ({rows / export_s:,.0f} rows/s, peak memory +{export_peak / 1e6:.0f} MB), import_all "
          f"{import_s:.1f} s ({rows / import_s:,.0f} rows/s, peak memory +{import_peak / 1e6:.0f} MB), "
          f"round trip identical: {same} (on {connection.vendor})")
    assert same
    assert export_peak < size and import_peak < size  # streamed: memory does not grow with the tables
