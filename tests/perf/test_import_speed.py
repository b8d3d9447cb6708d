"""Benchmark: importing the real test split into PostgreSQL, then re-importing it (goal: each under 3 s)."""
import io
import time

import pytest
from django.core.management import call_command

from annotation.models import Item

pytestmark = [pytest.mark.perf, pytest.mark.django_db(transaction=True)]


def test_import_and_reimport_test_split(detectbench_dir):
    path = str(detectbench_dir / "test.jsonl")
    timings = {}
    for label in ("import", "re-import"):
        out = io.StringIO()
        start = time.perf_counter()
        call_command("import_items", path, "--split", "test", stdout=out)
        timings[label] = time.perf_counter() - start
        print(f"\n{label}: {timings[label]:.2f} s  ({out.getvalue().strip()})")
    assert Item.objects.count() == 1196
    out = io.StringIO()
    start = time.perf_counter()
    call_command("export_items", "--split", "test", stdout=out)
    print(f"export: {time.perf_counter() - start:.2f} s ({len(out.getvalue()):,} bytes)")
    print(f"goal: each under 3 s -> import {'OK' if timings['import'] < 3 else 'MISSED'}, "
          f"re-import {'OK' if timings['re-import'] < 3 else 'MISSED'}")
