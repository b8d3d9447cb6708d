"""The built-in first-option model over the real test split scores exactly what it is built to score: the answer
reader reads its `### Answer:\\n1` as option 1 even where an option's text is a number (items 2131, 3789)."""
import io
import json

import pytest
from django.core.management import call_command

from evaluation.models import Result, RunStatus
from tests.support.items import import_items

pytestmark = pytest.mark.django_db(transaction=True)


def test_first_option_scores_571_of_1196_on_test_with_no_parse_failure(detectbench_dir):
    assert import_items(detectbench_dir / "test.jsonl", split="test") == 1196
    out = io.StringIO()
    call_command("evaluate", "--builtin", "first-option", "--method", "naive", "--split", "test", "--wait",
                 "--in-process", "--no-progress", stdout=out, stderr=io.StringIO())
    (line,) = [json.loads(text) for text in out.getvalue().splitlines() if text.strip()]
    assert (line["n"], line["parse_failures"], line["errors"]) == (1196, 0, 0), line
    assert line["correct"] == 571 and line["accuracy"] == pytest.approx(571 / 1196), line
    assert line["status"] == RunStatus.FINISHED, line
    results = Result.objects.filter(run_id=line["run"])
    assert results.exclude(parse_status="ok").count() == 0
    assert results.filter(is_correct=True).count() == 571
