"""Issue 19, break 6: item imports have declared bounds (settings ITEM_IMPORT_*, annotation.dataformat.Limits).

An item with 60,000 options and answer 59,999 answered 500 on the web upload and printed a traceback in
`import_items` (`DataError: smallint out of range`); 40,000 options were accepted (a 4.8 MB participant
page). Options per item, the length of context, question, each option and each part of the clue graph, the
answer index and the file's size are bounded: a record past one is refused as `FILE:LINE: field: ...`, the
command exits non-zero without a traceback, the web upload answers 400 naming the line, nothing is written.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.dataformat import DEFAULT_LIMITS, Limits, parse_jsonl
from annotation.models import Item, ItemRevision
from tests.conftest import REPO_DIR, subprocess_env

pytestmark = pytest.mark.django_db

GOOD = {
    "id": 1, "context": "The butler had mud on his boots.", "question": "Who was in the garden?",
    "options": ["The butler", "The cook"], "answer": 0,
    "clue_graph": {"evidence": "mud on his boots -> he walked outside",
                   "multi_hop_reasoning": "he walked outside -> The butler."},
}
LIMITS = DEFAULT_LIMITS


def _line(*, evidence: str | None = None, reasoning: str | None = None, **over) -> str:
    graph = GOOD["clue_graph"]
    return json.dumps({**GOOD, **over, "clue_graph": {"evidence": evidence or graph["evidence"],
                                                      "multi_hop_reasoning": reasoning or graph["multi_hop_reasoning"]}})


def _options(n: int) -> list[str]:
    return [f"option {i}" for i in range(n)]


# name: (the second line of the file, the field named in the error, words of the message)
OVER_THE_BOUNDS = {
    "60000_options_answer_59999": (_line(id=2, options=_options(60_000), answer=59_999), "options", "at most 26"),
    "40000_options": (_line(id=2, options=_options(40_000)), "options", "40,000 options"),
    "27_options": (_line(id=2, options=_options(27)), "options", "at most 26"),
    "answer_past_the_options_an_item_may_have": (_line(id=2, options=_options(27), answer=40_000), "answer",
                                                "out of range"),
    "answer_past_its_options": (_line(id=2, answer=4), "answer", "out of range for 2 options"),
    "answer_that_overflows_a_smallint": (_line(id=2, answer=59_999), "answer", "out of range"),
    "negative_answer": (_line(id=2, answer=-1), "answer", "out of range"),
    "context_too_long": (_line(id=2, context="c" * (LIMITS.max_context_chars + 1)), "context", "at most 50,000"),
    "question_too_long": (_line(id=2, question="q" * (LIMITS.max_question_chars + 1)), "question", "at most 5,000"),
    "option_too_long": (_line(id=2, options=["fine", "o" * (LIMITS.max_option_chars + 1)]), "options[1]",
                        "at most 2,000"),
    "evidence_too_long": (_line(id=2, evidence="e" * (LIMITS.max_clue_graph_chars + 1)), "clue_graph.evidence",
                          "at most 50,000"),
    "reasoning_too_long": (_line(id=2, reasoning="r" * (LIMITS.max_clue_graph_chars + 1)),
                           "clue_graph.multi_hop_reasoning", "at most 50,000"),
}


def _write(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def _nothing_written() -> bool:
    return Item.objects.count() == 0 and ItemRevision.objects.count() == 0


@pytest.mark.parametrize("case", sorted(OVER_THE_BOUNDS))
def test_the_command_refuses_a_record_over_a_bound_with_file_line_and_field(tmp_path, case):
    bad, field, words = OVER_THE_BOUNDS[case]
    path = _write(tmp_path, case, _line(id=1) + "\n" + bad + "\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), "--split", "test", stdout=io.StringIO(), stderr=io.StringIO())
    text = str(refused.value)
    assert f"{path}:2: {field}: " in text and words in text, text
    assert len(text) < 2_000  # one line per problem, not one per option
    assert _nothing_written()


@pytest.mark.parametrize("case", sorted(OVER_THE_BOUNDS))
def test_the_web_upload_refuses_a_record_over_a_bound_with_a_400(researcher_client, case):
    bad, field, words = OVER_THE_BOUNDS[case]
    upload = SimpleUploadedFile(f"{case}.jsonl", (_line(id=1) + "\n" + bad + "\n").encode())
    response = researcher_client.post(reverse("annotation:item_import"),
                                      {"file": upload, "source": "web", "split": "test"})
    assert response.status_code == 400
    page = response.content.decode()
    assert f"<code>{case}.jsonl:2</code> <strong>{field}</strong>:" in page and words in page, page[-3000:]
    assert "nothing was imported" in page
    assert _nothing_written()


def test_the_bounds_themselves_are_accepted(tmp_path):
    """26 options with the answer last, and every text exactly at its limit, import."""
    text = "\n".join([
        _line(id=1, options=_options(LIMITS.max_options), answer=LIMITS.max_options - 1),
        _line(id=2, context="c" * LIMITS.max_context_chars, question="q" * LIMITS.max_question_chars,
              options=["o" * LIMITS.max_option_chars, "p"], evidence="e" * LIMITS.max_clue_graph_chars,
              reasoning="r" * LIMITS.max_clue_graph_chars),
    ]) + "\n"
    call_command("import_items", str(_write(tmp_path, "at_the_bounds", text)), "--split", "test",
                 stdout=io.StringIO(), stderr=io.StringIO())
    assert Item.objects.count() == 2
    assert Item.objects.get(external_id="1").answer_index == LIMITS.max_options - 1


def test_the_bounds_are_settings(tmp_path, settings):
    settings.ITEM_IMPORT_MAX_OPTIONS = 3
    settings.ITEM_IMPORT_MAX_QUESTION_CHARS = 10
    path = _write(tmp_path, "small", _line(id=1, options=_options(4), question="Who did it, then?") + "\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), "--split", "test", stdout=io.StringIO(), stderr=io.StringIO())
    text = str(refused.value)
    assert f"{path}:1: options: 4 options: an item may have at most 3" in text
    assert f"{path}:1: question: 17 characters: at most 10" in text
    assert _nothing_written()


def test_a_file_over_the_size_limit_is_refused_whole_even_when_skipping_invalid_lines(tmp_path, settings):
    lines = [_line(id=i) for i in range(1, 11)]
    settings.ITEM_IMPORT_MAX_FILE_BYTES = len(lines[0]) * 5
    path = _write(tmp_path, "big", "\n".join(lines) + "\n")
    for extra in ([], ["--skip-invalid"]):
        with pytest.raises(CommandError) as refused:
            call_command("import_items", str(path), "--split", "test", *extra, stdout=io.StringIO(),
                         stderr=io.StringIO())
        assert f"{path}:5: the file is over the {settings.ITEM_IMPORT_MAX_FILE_BYTES:,}-byte limit" in str(refused.value)
        assert _nothing_written()


def test_the_web_upload_refuses_a_file_over_the_size_limit_before_reading_it(researcher_client, settings):
    settings.ITEM_IMPORT_MAX_FILE_BYTES = 1_000
    upload = SimpleUploadedFile("big.jsonl", ("\n".join(_line(id=i) for i in range(1, 20)) + "\n").encode())
    response = researcher_client.post(reverse("annotation:item_import"),
                                      {"file": upload, "source": "web", "split": "test"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "an import takes at most 1,000" in page and "ITEM_IMPORT_MAX_FILE_BYTES" in page
    assert _nothing_written()


def test_a_line_longer_than_a_record_is_measured_without_being_kept_whole():
    huge = b'{"id": 1, "context": "' + b"x" * 3_000_000 + b'"}\n'
    parsed = parse_jsonl(io.BytesIO(huge + _line(id=2).encode() + b"\n"), file="f.jsonl",
                         limits=Limits(max_file_bytes=10_000_000))
    assert [str(e) for e in parsed.errors] == [f"f.jsonl:1: line is {len(huge):,} bytes, over the 1,000,000-byte "
                                               "limit for one record"]
    assert [r.external_id for r in parsed.records] == ["2"]


@pytest.mark.django_db(transaction=True)
def test_the_command_exits_non_zero_without_a_traceback_for_60000_options(tmp_path):
    path = _write(tmp_path, "many", _line(id=1) + "\n" + OVER_THE_BOUNDS["60000_options_answer_59999"][0] + "\n")
    proc = subprocess.run([sys.executable, "manage.py", "import_items", str(path), "--split", "test"],
                          cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "DataError" not in proc.stderr
    assert f"{path}:2: options: 60,000 options: an item may have at most 26" in proc.stderr
    assert Item.objects.count() == 0
