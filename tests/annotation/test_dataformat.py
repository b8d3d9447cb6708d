"""Issue 11 hardening of the item store: hostile import files, the curation progress POST, CSV exports.

Imports refuse what the database cannot store or what only an attacker writes (NUL
characters, lone surrogates, NaN/Infinity, over-deep nesting, huge integers) and empty
files, with FILE:LINE errors: the command exits non-zero without a traceback, the web
upload answers 400, and the database is unchanged.

Issue 19, break 6: item imports have declared bounds (settings ITEM_IMPORT_*, annotation.dataformat.Limits).

An item with 60,000 options and answer 59,999 answered 500 on the web upload and printed a traceback in
`import_items` (`DataError: smallint out of range`); 40,000 options were accepted (a 4.8 MB participant
page). Options per item, the length of context, question, each option and each part of the clue graph, the
answer index and the file's size are bounded: a record past one is refused as `FILE:LINE: field: ...`, the
command exits non-zero without a traceback, the web upload answers 400 naming the line, nothing is written."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.dataformat import DEFAULT_LIMITS, Limits, parse_jsonl
from annotation.models import Item, ItemRevision, ItemStatus
from tests.conftest import REPO_DIR, subprocess_env
from tests.support.items import import_text

from .workflow_support import make_items

pytestmark = pytest.mark.django_db


GOOD = {
    "id": 1, "context": "The butler had mud on his boots.", "question": "Who was in the garden?",
    "options": ["The butler", "The cook"], "answer": 0,
    "clue_graph": {"evidence": "mud on his boots -> he walked outside",
                   "multi_hop_reasoning": "he walked outside -> The butler."},
}


def _line(**over) -> str:
    return json.dumps({**GOOD, **over})


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# name: (the second line of the file, the field named in the error or None, words of the message)
HOSTILE_LINES = {
    "nul_escape_in_context": (_line(id=2, context="a\u0000b"), "context", "NUL"),
    "nul_escape_in_an_option": (_line(id=2, options=["x", "y\u0000"]), "options[1]", "NUL"),
    "nul_escape_in_an_extra_key": (_line(id=2, meta={"a\u0000": 1}), "meta", "NUL"),
    "lone_surrogate_in_question": (_line(id=2).replace('"Who', '"\\ud800Who'), "question", "surrogate"),
    "lone_surrogate_in_evidence": (_line(id=2).replace('"mud', '"\\udfffmud'), "clue_graph.evidence", "surrogate"),
    "lone_surrogate_in_the_id": (_line(id="x\ud800"), "id", "surrogate"),
    "deep_nesting_100k": ('{"id": 2, "meta": ' + _deep(100_000) + "}", None, "nested"),
    "deep_nesting_whole_line": (_deep(100_000), None, "nested"),
    "moderately_deep_extra": (_line(id=2, meta=json.loads(_deep(200))), "meta", "nested"),
    "nan_in_extra": (_line(id=2).replace('"answer": 0', '"answer": 0, "score": NaN'), None, "NaN"),
    "overflowing_float": (_line(id=2).replace('"answer": 0', '"answer": 0, "score": 1e999'), None, "finite"),
    "huge_integer": (_line(id=2).replace('"answer": 0', '"answer": 0, "n": ' + "9" * 5000), None, "digits"),
    "raw_nul_character": (_line(id=2, context="a\x00b").replace("\\u0000", "\x00"), None, "character at column 24"),
    "duplicate_key": ('{"id": 900042, ' + _line(id=900043)[1:], "id", "duplicate key"),
    "duplicate_key_in_clue_graph": (_line(id=2).replace('"evidence"', '"evidence": "", "evidence"'),
                                    "clue_graph.evidence", "duplicate key"),
}


def _write(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@pytest.mark.parametrize("case", sorted(HOSTILE_LINES))
def test_hostile_line_is_refused_with_file_line_and_field_and_nothing_is_imported(tmp_path, case):
    bad, field, words = HOSTILE_LINES[case]
    path = _write(tmp_path, case, _line(id=1) + "\n" + bad + "\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), "--split", "test", stdout=io.StringIO(), stderr=io.StringIO())
    text = str(refused.value)
    assert f"{path}:2:" in text
    if field:
        assert f"{path}:2: {field}:" in text, text
    assert words in text, text
    text.encode("utf-8")  # the message itself is printable (no surrogate echoed back)
    assert Item.objects.count() == 0 and ItemRevision.objects.count() == 0


@pytest.mark.parametrize("case", sorted(HOSTILE_LINES))
def test_hostile_line_with_skip_invalid_imports_only_the_good_lines(tmp_path, case):
    bad, _, _ = HOSTILE_LINES[case]
    path = _write(tmp_path, case, _line(id=1) + "\n" + bad + "\n")
    err = io.StringIO()
    call_command("import_items", str(path), "--split", "test", "--skip-invalid", stdout=io.StringIO(), stderr=err)
    assert f"skipped {path}:2:" in err.getvalue()
    assert list(Item.objects.values_list("external_id", flat=True)) == ["1"]


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", "\ufeff\n".encode()], ids=["empty", "blank_lines", "bom"])
def test_an_empty_file_is_refused(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(CommandError, match=rf"{path}:1: no records"):
        call_command("import_items", str(path), "--split", "test", stdout=io.StringIO(), stderr=io.StringIO())


def test_a_file_whose_every_line_is_invalid_is_refused_even_when_skipping_invalid_lines(tmp_path):
    path = _write(tmp_path, "all_bad", _line(answer=5) + "\n" + "{\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), "--split", "test", "--skip-invalid", stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert f"{path}:1: answer:" in str(refused.value) and f"{path}:2:" in str(refused.value)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", ["nul_escape_in_context", "lone_surrogate_in_question", "deep_nesting_100k", "empty"])
def test_the_command_exits_non_zero_without_a_traceback(tmp_path, case):
    text = "" if case == "empty" else _line(id=1) + "\n" + HOSTILE_LINES[case][0] + "\n"
    path = _write(tmp_path, case, text)
    proc = subprocess.run([sys.executable, "manage.py", "import_items", str(path), "--split", "test"],
                          cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert f"{path}:{1 if case == 'empty' else 2}:" in proc.stderr
    assert Item.objects.count() == 0


@pytest.mark.parametrize("case", [*sorted(HOSTILE_LINES), "empty"])
def test_the_web_upload_answers_400_with_the_line_and_imports_nothing(researcher_client, case):
    text = "" if case == "empty" else _line(id=1) + "\n" + HOSTILE_LINES[case][0] + "\n"
    upload = SimpleUploadedFile(f"{case}.jsonl", text.encode("utf-8", "surrogatepass"))
    response = researcher_client.post(reverse("annotation:item_import"),
                                      {"file": upload, "source": "web", "split": "test"})
    assert response.status_code == 400
    page = response.content.decode()
    if case == "empty":
        assert "The submitted file is empty." in page
    else:
        assert "nothing was imported" in page and f"<code>{case}.jsonl:2</code>" in page
    assert Item.objects.count() == 0 and ItemRevision.objects.count() == 0


def test_the_check_is_cheap_for_a_normal_record_and_keeps_extra_fields():
    """A legitimate record with a nested extra field (a few levels) still imports and round-trips."""
    record = dict(GOOD, id="k-1", meta={"tags": [["a", "b"], {"c": [1, 2.5, None, True]}]})
    report = import_text(json.dumps(record) + "\n", source="s", split="dev")
    assert report.created == 1
    assert Item.objects.get().extra == {"meta": record["meta"]}


# ---- the curation progress page: queueing imported items needs an explicit choice and a confirmation


def _statuses() -> dict[str, set[str]]:
    rows = Item.objects.values_list("split", "status")
    return {split: {s for sp, s in rows if sp == split} for split, _ in rows}


def test_an_empty_post_to_the_progress_page_queues_nothing(researcher_client):
    make_items(3, status=ItemStatus.IMPORTED, start=1)
    Item.objects.filter(external_id="3").update(split="train")
    response = researcher_client.post(reverse("annotation:progress"), {})
    assert response.status_code == 400
    assert "Choose the split" in response.content.decode()
    assert set(Item.objects.values_list("status", flat=True)) == {ItemStatus.IMPORTED}
    assert ItemRevision.objects.filter(note="queued for verification").count() == 0


def test_a_chosen_split_is_counted_first_and_queued_only_when_confirmed(researcher_client):
    make_items(3, status=ItemStatus.IMPORTED, start=1)
    Item.objects.filter(external_id="3").update(split="train")
    url = reverse("annotation:progress")
    asked = researcher_client.post(url, {"split": "test"})
    assert asked.status_code == 200
    page = asked.content.decode()
    assert "2 imported items will be queued for verification." in page and 'name="confirm" value="1"' in page
    assert set(Item.objects.values_list("status", flat=True)) == {ItemStatus.IMPORTED}  # not yet
    assert researcher_client.post(url, {"split": "test", "source": "", "confirm": "1"}).status_code == 302
    assert _statuses() == {"test": {ItemStatus.VERIFICATION}, "train": {ItemStatus.IMPORTED}}
    # Every split is a choice of its own, never the default.
    assert researcher_client.post(url, {"split": "*", "confirm": "1"}).status_code == 302
    assert set(Item.objects.values_list("status", flat=True)) == {ItemStatus.VERIFICATION}


def test_a_choice_that_matches_nothing_says_so(researcher_client):
    make_items(1, status=ItemStatus.IMPORTED)
    page = researcher_client.post(reverse("annotation:progress"), {"source": "nowhere"}).content.decode()
    assert "No imported item matches this choice" in page and 'name="confirm"' not in page


def test_the_service_refuses_to_queue_without_a_choice(researcher):
    from annotation.services import items_enter_workflow
    from foundation.errors import Invalid

    make_items(2, status=ItemStatus.IMPORTED)
    with pytest.raises(Invalid) as refused:
        items_enter_workflow(user=researcher)
    assert refused.value.field == "split"
    assert items_enter_workflow(user=researcher, every_split=True, dry_run=True) == 2
    assert set(Item.objects.values_list("status", flat=True)) == {ItemStatus.IMPORTED}
    assert items_enter_workflow(user=researcher, every_split=True) == 2


# ---- CSV exports: a cell a spreadsheet would run as a formula is written as text


FORMULAS = {"id": "=1+2", "context": "=cmd|' /C calc'!A0", "question": "+1+2 who?", "evidence": "\t=1+1 -> x",
            "multi_hop_reasoning": "\r=1+1 -> y", "option": "@SUM(1+1)", "other_option": "-2+3"}


def test_export_items_csv_neutralises_formula_cells_and_jsonl_keeps_the_text():
    record = dict(GOOD, id=FORMULAS["id"], context=FORMULAS["context"], question=FORMULAS["question"],
                  options=[FORMULAS["option"], FORMULAS["other_option"]],
                  clue_graph={"evidence": FORMULAS["evidence"], "multi_hop_reasoning": FORMULAS["multi_hop_reasoning"]})
    import_text(json.dumps(record) + "\n", source="evil", split="dev")
    out = io.StringIO()
    call_command("export_items", "--source", "evil", "--format", "csv", stdout=out, stderr=io.StringIO())
    [header, row] = list(csv.reader(io.StringIO(out.getvalue())))
    cells = dict(zip(header, row))
    for name in ("id", "context", "question", "evidence", "multi_hop_reasoning"):
        assert cells[name] == "'" + FORMULAS[name].replace("|", "\\|"), (name, cells[name])
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row)
    assert json.loads(cells["options"]) == record["options"]  # a JSON list starts with [ and is kept as it is
    jsonl = io.StringIO()
    call_command("export_items", "--source", "evil", stdout=jsonl, stderr=io.StringIO())
    assert json.loads(jsonl.getvalue()) == record  # the official format keeps the text exactly


def test_agreement_csv_export_neutralises_formula_cells(researcher_client, django_user_model):
    from django.contrib.auth.models import Group

    from annotation.models import Stage
    from annotation.services import verification_submit

    from .workflow_support import set_k

    set_k(Stage.VERIFICATION, 2)
    group = Group.objects.get_or_create(name="annotators")[0]
    raters = [django_user_model.objects.create_user(name) for name in ("=cmd|' /C calc'!A0", "@SUM(1+1)")]
    for rater in raters:
        rater.groups.add(group)
    for item in make_items(2):
        for rater in raters:
            verification_submit(item_id=item.pk, user=rater, decision="keep", criteria=[], item_version=item.version)
    text = researcher_client.get(reverse("annotation:agreement_export", args=["csv"])).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    pairs = {row[1] for row in rows[1:]}
    assert "'=cmd\\|' /C calc'!A0 & @SUM(1+1)" in pairs or "'@SUM(1+1) & =cmd\\|' /C calc'!A0" in pairs, pairs
    assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for row in rows for cell in row)


# --------------------------------------------------------------------------- import bounds

LIMITS = DEFAULT_LIMITS


def _bounded_line(*, evidence: str | None = None, reasoning: str | None = None, **over) -> str:
    graph = GOOD["clue_graph"]
    return json.dumps({**GOOD, **over, "clue_graph": {"evidence": evidence or graph["evidence"],
                                                      "multi_hop_reasoning": reasoning or graph["multi_hop_reasoning"]}})


def _options(n: int) -> list[str]:
    return [f"option {i}" for i in range(n)]


# name: (the second line of the file, the field named in the error, words of the message)
OVER_THE_BOUNDS = {
    "60000_options_answer_59999": (_bounded_line(id=2, options=_options(60_000), answer=59_999), "options", "at most 26"),
    "40000_options": (_bounded_line(id=2, options=_options(40_000)), "options", "40,000 options"),
    "27_options": (_bounded_line(id=2, options=_options(27)), "options", "at most 26"),
    "answer_past_the_options_an_item_may_have": (_bounded_line(id=2, options=_options(27), answer=40_000), "answer",
                                                "out of range"),
    "answer_past_its_options": (_bounded_line(id=2, answer=4), "answer", "out of range for 2 options"),
    "answer_that_overflows_a_smallint": (_bounded_line(id=2, answer=59_999), "answer", "out of range"),
    "negative_answer": (_bounded_line(id=2, answer=-1), "answer", "out of range"),
    "context_too_long": (_bounded_line(id=2, context="c" * (LIMITS.max_context_chars + 1)), "context", "at most 50,000"),
    "question_too_long": (_bounded_line(id=2, question="q" * (LIMITS.max_question_chars + 1)), "question", "at most 5,000"),
    "option_too_long": (_bounded_line(id=2, options=["fine", "o" * (LIMITS.max_option_chars + 1)]), "options[1]",
                        "at most 2,000"),
    "evidence_too_long": (_bounded_line(id=2, evidence="e" * (LIMITS.max_clue_graph_chars + 1)), "clue_graph.evidence",
                          "at most 50,000"),
    "reasoning_too_long": (_bounded_line(id=2, reasoning="r" * (LIMITS.max_clue_graph_chars + 1)),
                           "clue_graph.multi_hop_reasoning", "at most 50,000"),
}


def _write_file(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def _nothing_written() -> bool:
    return Item.objects.count() == 0 and ItemRevision.objects.count() == 0


@pytest.mark.parametrize("case", sorted(OVER_THE_BOUNDS))
def test_the_command_refuses_a_record_over_a_bound_with_file_line_and_field(tmp_path, case):
    bad, field, words = OVER_THE_BOUNDS[case]
    path = _write_file(tmp_path, case, _bounded_line(id=1) + "\n" + bad + "\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), "--split", "test", stdout=io.StringIO(), stderr=io.StringIO())
    text = str(refused.value)
    assert f"{path}:2: {field}: " in text and words in text, text
    assert len(text) < 2_000  # one line per problem, not one per option
    assert _nothing_written()


@pytest.mark.parametrize("case", sorted(OVER_THE_BOUNDS))
def test_the_web_upload_refuses_a_record_over_a_bound_with_a_400(researcher_client, case):
    bad, field, words = OVER_THE_BOUNDS[case]
    upload = SimpleUploadedFile(f"{case}.jsonl", (_bounded_line(id=1) + "\n" + bad + "\n").encode())
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
        _bounded_line(id=1, options=_options(LIMITS.max_options), answer=LIMITS.max_options - 1),
        _bounded_line(id=2, context="c" * LIMITS.max_context_chars, question="q" * LIMITS.max_question_chars,
              options=["o" * LIMITS.max_option_chars, "p"], evidence="e" * LIMITS.max_clue_graph_chars,
              reasoning="r" * LIMITS.max_clue_graph_chars),
    ]) + "\n"
    call_command("import_items", str(_write_file(tmp_path, "at_the_bounds", text)), "--split", "test",
                 stdout=io.StringIO(), stderr=io.StringIO())
    assert Item.objects.count() == 2
    assert Item.objects.get(external_id="1").answer_index == LIMITS.max_options - 1


def test_the_bounds_are_settings(tmp_path, settings):
    settings.ITEM_IMPORT_MAX_OPTIONS = 3
    settings.ITEM_IMPORT_MAX_QUESTION_CHARS = 10
    path = _write_file(tmp_path, "small", _bounded_line(id=1, options=_options(4), question="Who did it, then?") + "\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), "--split", "test", stdout=io.StringIO(), stderr=io.StringIO())
    text = str(refused.value)
    assert f"{path}:1: options: 4 options: an item may have at most 3" in text
    assert f"{path}:1: question: 17 characters: at most 10" in text
    assert _nothing_written()


def test_a_file_over_the_size_limit_is_refused_whole_even_when_skipping_invalid_lines(tmp_path, settings):
    lines = [_bounded_line(id=i) for i in range(1, 11)]
    settings.ITEM_IMPORT_MAX_FILE_BYTES = len(lines[0]) * 5
    path = _write_file(tmp_path, "big", "\n".join(lines) + "\n")
    for extra in ([], ["--skip-invalid"]):
        with pytest.raises(CommandError) as refused:
            call_command("import_items", str(path), "--split", "test", *extra, stdout=io.StringIO(),
                         stderr=io.StringIO())
        assert f"{path}:5: the file is over the {settings.ITEM_IMPORT_MAX_FILE_BYTES:,}-byte limit" in str(refused.value)
        assert _nothing_written()


def test_the_web_upload_refuses_a_file_over_the_size_limit_before_reading_it(researcher_client, settings):
    settings.ITEM_IMPORT_MAX_FILE_BYTES = 1_000
    upload = SimpleUploadedFile("big.jsonl", ("\n".join(_bounded_line(id=i) for i in range(1, 20)) + "\n").encode())
    response = researcher_client.post(reverse("annotation:item_import"),
                                      {"file": upload, "source": "web", "split": "test"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "an import takes at most 1,000" in page and "ITEM_IMPORT_MAX_FILE_BYTES" in page
    assert _nothing_written()


def test_a_line_longer_than_a_record_is_measured_without_being_kept_whole():
    huge = b'{"id": 1, "context": "' + b"x" * 3_000_000 + b'"}\n'
    parsed = parse_jsonl(io.BytesIO(huge + _bounded_line(id=2).encode() + b"\n"), file="f.jsonl",
                         limits=Limits(max_file_bytes=10_000_000))
    assert [str(e) for e in parsed.errors] == [f"f.jsonl:1: line is {len(huge):,} bytes, over the 1,000,000-byte "
                                               "limit for one record"]
    assert [r.external_id for r in parsed.records] == ["2"]


@pytest.mark.django_db(transaction=True)
def test_the_command_exits_non_zero_without_a_traceback_for_60000_options(tmp_path):
    path = _write_file(tmp_path, "many", _bounded_line(id=1) + "\n" + OVER_THE_BOUNDS["60000_options_answer_59999"][0] + "\n")
    proc = subprocess.run([sys.executable, "manage.py", "import_items", str(path), "--split", "test"],
                          cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "DataError" not in proc.stderr
    assert f"{path}:2: options: 60,000 options: an item may have at most 26" in proc.stderr
    assert Item.objects.count() == 0
