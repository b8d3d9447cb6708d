"""Import and export of the official DetectBench JSONL, on the real data and on bad input."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.errors import ImportRejected
from annotation.models import Item, ItemRevision
from tests.conftest import REPO_DIR, subprocess_env
from tests.support.items import import_text

pytestmark = pytest.mark.django_db


def _import(path: Path, *args: str) -> str:
    out = io.StringIO()
    call_command("import_items", str(path), *args, stdout=out, stderr=out)
    return out.getvalue()


def _export(*args: str) -> str:
    out = io.StringIO()
    call_command("export_items", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


GOOD = {
    "id": 1, "context": "The butler had mud on his boots.", "question": "Who was in the garden?",
    "options": ["The butler", "The cook"], "answer": 0,
    "clue_graph": {"evidence": "mud on his boots -> he walked outside", "multi_hop_reasoning": "he walked outside -> The butler."},
}


def test_real_test_split_imports_idempotently_and_exports_field_for_field(detectbench_dir, tmp_path):
    path = detectbench_dir / "test.jsonl"
    first = _import(path, "--split", "test")
    assert "created 1196, updated 0, unchanged 0, rejected 0" in first
    assert Item.objects.filter(split="test").count() == 1196
    assert ItemRevision.objects.count() == 1196

    second = _import(path, "--split", "test")
    assert "created 0, updated 0, unchanged 1196, rejected 0" in second
    assert ItemRevision.objects.count() == 1196  # no revision when nothing changed

    out = tmp_path / "export.jsonl"
    call_command("export_items", "--split", "test", "--out", str(out), stderr=io.StringIO())
    original = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(exported) == len(original) == 1196
    for a, b in zip(original, exported):
        assert a == b
        assert type(a["id"]) is type(b["id"])


def test_real_train_split_gives_367(detectbench_dir):
    assert "created 367" in _import(detectbench_dir / "train.jsonl", "--split", "train")
    assert Item.objects.filter(split="train").count() == 367


def test_derived_fields_on_real_items(detectbench_dir):
    _import(detectbench_dir / "test.jsonl", "--split", "test")
    item = Item.objects.get(external_id="10")
    assert item.question_type == "what"
    assert 150 < item.context_words < 400
    assert item.context_tokens > item.context_words
    assert item.evidence_count >= 2 and item.reasoning_steps >= 1
    types = set(Item.objects.values_list("question_type", flat=True))
    assert {"how", "what", "which", "who", "why", "other"} <= types


def test_changed_record_is_updated_with_a_revision(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    assert "created 1" in _import(path, "--split", "dev", "--source", "mine")
    changed = dict(GOOD, question="Who walked in the garden?")
    path.write_text(json.dumps(changed) + "\n", encoding="utf-8")
    assert "updated 1" in _import(path, "--split", "dev", "--source", "mine")
    item = Item.objects.get(source="mine", external_id="1")
    assert item.version == 2 and item.question == "Who walked in the garden?"
    revisions = list(item.revisions.order_by("number"))
    assert [r.number for r in revisions] == [1, 2]
    assert revisions[1].changed_fields == ["question"]
    assert revisions[0].snapshot["question"] == "Who was in the garden?"


def _line(**override) -> str:
    record = json.loads(json.dumps(GOOD))
    for key, value in override.items():
        if value is ...:
            record.pop(key)
        else:
            record[key] = value
    return json.dumps(record)


BAD_INPUTS = {
    "truncated_json": (lambda: _line()[:-7], None, "invalid JSON"),
    "missing_field": (lambda: _line(question=...), "question", "missing field"),
    "answer_out_of_range": (lambda: _line(answer=4), "answer", "out of range"),
    "empty_options": (lambda: _line(options=[]), "options", "at least 2"),
    "non_string_context": (lambda: _line(context=42), "context", "must be a string"),
    "ten_megabyte_line": (lambda: _line(context="x" * 10_000_000), None, "over the"),
    "duplicate_id": (lambda: _line(id=100), "id", "duplicate id"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_names_file_line_and_field_and_imports_nothing(tmp_path, case):
    make, field, message = BAD_INPUTS[case]
    good_first = _line(id=100)
    path = tmp_path / f"{case}.jsonl"
    path.write_text(good_first + "\n" + make() + "\n", encoding="utf-8")
    before = Item.objects.count()
    with pytest.raises(CommandError) as excinfo:
        _import(path, "--split", "test", "--source", "bad")
    text = str(excinfo.value)
    where = f"{path}:2" if case != "duplicate_id" else f"{path}:2: id"
    assert where in text
    if field:
        assert f": {field}:" in text
    assert message in text
    assert Item.objects.count() == before  # the good first line was not imported either


def test_invalid_utf8_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(_line().encode() + b"\n" + _line(id=2, context="CAFE").replace("CAFE", "caf\xe9").encode("latin-1") + b"\n")
    with pytest.raises(CommandError, match=rf"{path}:2: invalid UTF-8"):
        _import(path, "--split", "test")
    assert Item.objects.count() == 0


def test_skip_invalid_imports_good_lines_and_lists_bad_ones(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([_line(id=1), _line(id=2, answer=9), _line(id=3)]) + "\n", encoding="utf-8")
    out = io.StringIO()
    call_command("import_items", str(path), "--split", "test", "--skip-invalid", stdout=out, stderr=out)
    assert "created 2, updated 0, unchanged 0, rejected 1" in out.getvalue()
    assert f"skipped {path}:2: answer:" in out.getvalue()
    assert sorted(Item.objects.values_list("external_id", flat=True)) == ["1", "3"]


def test_dry_run_writes_nothing(tmp_path):
    path = tmp_path / "dry.jsonl"
    path.write_text(_line() + "\n", encoding="utf-8")
    assert "dry run: would have created 1" in _import(path, "--split", "test", "--dry-run")
    assert Item.objects.count() == 0 and ItemRevision.objects.count() == 0


def test_string_ids_and_extra_fields_round_trip():
    record = dict(GOOD, id="case-007", difficulty="hard")
    import_text(json.dumps(record) + "\n", file_name="x.jsonl", source="s", split="dev")
    exported = json.loads(_export("--source", "s"))
    assert exported == record


def test_service_rejection_lists_every_error():
    text = "\n".join([_line(id=1, answer=-1), "{", _line(id=3, options="abc")])
    with pytest.raises(ImportRejected) as excinfo:
        import_text(text, file_name="f.jsonl", source="s", split="dev")
    assert [(e.line, e.field) for e in excinfo.value.line_errors] == [(1, "answer"), (2, None), (3, "options")]


def test_csv_export_has_one_row_per_item():
    import_text(_line(id=1) + "\n" + _line(id=2) + "\n", file_name="f.jsonl", source="s", split="dev")
    out = _export("--source", "s", "--format", "csv")
    assert out.splitlines()[0] == "id,context,question,options,answer,evidence,multi_hop_reasoning"
    assert len(out.strip().splitlines()) == 3


@pytest.mark.django_db(transaction=True)
def test_command_exits_non_zero_on_bad_input(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_line(answer=7) + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "manage.py", "import_items", str(path), "--split", "test"],
                          cwd=REPO_DIR, env=subprocess_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"{path}:1: answer: index 7 is out of range" in proc.stderr
    assert Item.objects.count() == 0


def _edit_in_app(external_id: str, user) -> Item:
    from annotation.services import item_update

    item = Item.objects.get(source="detectbench-v1.3", external_id=external_id)
    return item_update(item_id=item.pk, base_version=item.version, user=user, note="rewrite",
                       changes={"question": item.question + " (rewritten)"})


def test_an_import_never_overwrites_items_edited_in_the_app(tmp_path, django_user_model):
    """Re-importing the original file over edited items: a conflict per item named FILE:LINE, nothing written,
    a non-zero exit; --keep-curated skips them; --overwrite-curated replaces them with a revision saying so."""
    editor = django_user_model.objects.create_user("annotator2")
    records = [GOOD | {"id": n, "question": f"Who was in the garden {n}?"} for n in range(1, 6)]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _import(path, "--split", "test")
    # A status-only change (queueing) is not an edit of the content: no conflict for it.
    from annotation.services.leases import items_enter_workflow
    items_enter_workflow(user=editor, split="test")
    edited = _edit_in_app("2", editor)
    _edit_in_app("4", editor)
    # The source file changes upstream for items 2, 3 and 4; item 3 was not edited in the app.
    changed = [r | {"context": r["context"] + " Upstream fix."} if r["id"] in (2, 3, 4) else r for r in records]
    path.write_text("".join(json.dumps(r) + "\n" for r in changed))

    with pytest.raises(CommandError) as refused:
        _import(path, "--split", "test")
    message = str(refused.value)
    assert f"{path}:2: item 2 was edited in the app (revision {edited.version} by annotator2); not overwritten" in message
    assert f"{path}:4: item 4 was edited in the app" in message and ":3: item 3" not in message
    assert "Upstream fix." not in "".join(Item.objects.values_list("context", flat=True))  # nothing written

    kept = _import(path, "--split", "test", "--keep-curated")
    assert "updated 1" in kept and "kept 2 edited in the app" in kept
    assert Item.objects.get(external_id="3").context.endswith("Upstream fix.")
    assert Item.objects.get(external_id="2").question.endswith("(rewritten)")

    overwritten = _import(path, "--split", "test", "--overwrite-curated")
    assert "overwrote 2 edited in the app" in overwritten
    item = Item.objects.get(external_id="2")
    assert item.context.endswith("Upstream fix.") and not item.question.endswith("(rewritten)")
    last = ItemRevision.objects.filter(item=item).order_by("-number").first()
    assert f"over the app's edit (revision {edited.version} by annotator2" in last.note
    # After the overwrite the item counts as imported again: the same file again changes nothing.
    assert "unchanged 5" in _import(path, "--split", "test")


def test_the_import_page_lists_conflicts_and_offers_the_choice(tmp_path, researcher_client, django_user_model):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    editor = django_user_model.objects.create_user("annotator2")
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    _import(path, "--split", "test")
    _edit_in_app("1", editor)
    body = (json.dumps(GOOD | {"context": "Changed upstream."}) + "\n").encode()
    url = reverse("annotation:item_import")
    response = researcher_client.post(url, {"file": SimpleUploadedFile("test.jsonl", body), "source": "detectbench-v1.3",
                                            "split": "test"})
    assert response.status_code == 409
    assert "test.jsonl:1" in response.content.decode() and "was edited in the app" in response.content.decode()
    assert Item.objects.get(external_id="1").context == GOOD["context"]
    response = researcher_client.post(url, {"file": SimpleUploadedFile("test.jsonl", body), "source": "detectbench-v1.3",
                                            "split": "test", "curated": "keep"})
    assert response.status_code == 302 and Item.objects.get(external_id="1").context == GOOD["context"]


# ---- what an item's JSON content fields hold: every writer of content refuses the same values, naming the field

NAN = float("nan")
#: Values no JSON content field of an item can hold: null (their columns are NOT NULL), an empty text (neither the
#: list nor the object the field holds), NaN and the infinities (no JSON: PostgreSQL refuses them), also deep inside.
UNSTORABLE = ("null", "empty text", "NaN", "Infinity", "-Infinity", "nested NaN")


def json_content_fields() -> list[str]:
    """Found on the model: every JSON field of Item that is part of its content."""
    from django.db.models import JSONField

    from annotation.models import CONTENT_FIELDS

    return [f.name for f in Item._meta.concrete_fields if isinstance(f, JSONField) and f.name in CONTENT_FIELDS]


def unstorable(field: str, kind: str, item: Item):
    if kind == "nested NaN":
        return [*item.options, {"x": [1, NAN]}] if field == "options" else {"notes": [1, {"x": NAN}]}
    return {"null": None, "empty text": "", "NaN": NAN, "Infinity": float("inf"), "-Infinity": float("-inf")}[kind]


def test_a_value_a_json_content_field_cannot_hold_is_refused_by_every_edit_service_naming_the_field(annotator):
    """item_update (the admin, the pages, reverts, the sample loader) and item_create refuse it with the field's
    error (Invalid, 400), never a database error, and write nothing."""
    from functools import partial

    from django.db import transaction

    from annotation.services import item_create, item_update
    from foundation.errors import Invalid
    from tests.annotation.workflow_support import make_items

    (item,) = make_items(1)
    fields = json_content_fields()
    assert {"options", "translations", "extra"} <= set(fields)
    before = (item.version, item.content())
    failures = []
    for field in fields:
        for kind in UNSTORABLE:
            value = unstorable(field, kind, item)
            calls = {"item_update": partial(item_update, item_id=item.pk, base_version=item.version,
                                            changes={field: value}, user=annotator),
                     "item_create": partial(item_create, source="new", external_id="1", split="dev", user=annotator,
                                            content={**item.content(), field: value})}
            for name, call in calls.items():
                try:
                    with transaction.atomic():
                        call()
                except Invalid as refusal:
                    if refusal.field != field or field not in refusal.errors:
                        failures.append(f"{name} {field}={kind}: refused naming {refusal.field!r}")
                except Exception as error:  # noqa: BLE001 - what a 500 would have been
                    failures.append(f"{name} {field}={kind}: {type(error).__name__}")
                else:
                    failures.append(f"{name} {field}={kind}: stored")
    assert not failures, "\n".join(failures)
    item.refresh_from_db()
    assert (item.version, item.content()) == before and not Item.objects.filter(source="new").exists()
    # What they can hold is still taken: objects and lists of finite numbers, nulls inside.
    saved = item_update(item_id=item.pk, base_version=item.version, user=annotator,
                        changes={"translations": {}, "extra": {"notes": [1.5, None, {"x": -2}]}})
    assert saved.extra == {"notes": [1.5, None, {"x": -2}]} and saved.version == item.version + 1


def test_an_edit_of_the_original_takes_its_translations_out_of_what_participants_see_until_brought_up_to_date():
    """The audit's case: a rewrite swaps two options and moves the answer; the Chinese options stay in the old order.
    The translation is marked out of date in the same revision, so a Chinese page shows the original (scored
    right) and Data quality lists it; a revert brings it back; an import that changes the original marks it too."""
    from annotation.services import item_create, item_revert, item_update
    from evaluation.statistics.quality_checks import translation_gaps
    from studies.content import is_translated, shown_item

    zh = {"context": "管家的靴子上有泥。", "question": "谁去过花园？", "options": ["管家", "厨师", "园丁"]}
    item = item_create(source="tr", external_id="1", split="dev", content={
        "context": "The butler had mud on his boots.", "question": "Who was in the garden?",
        "options": ["The butler", "The cook", "The gardener"], "answer_index": 0, "translations": {"zh-hans": zh}})
    assert shown_item(context=item.context, question=item.question, options=item.options,
                      translations=item.translations, language="zh-hans").options == tuple(zh["options"])
    edited = item_update(item_id=item.pk, base_version=item.version, note="reordered",
                         changes={"options": ["The gardener", "The cook", "The butler"], "answer_index": 2})
    assert edited.translations["zh-hans"]["out_of_date"] == "options"
    assert edited.revisions.get(number=edited.version).changed_fields == ["options", "answer_index", "translations"]
    shown = shown_item(context=edited.context, question=edited.question, options=edited.options,
                       translations=edited.translations, language="zh-hans")
    assert shown.language == "" and shown.options[edited.answer_index] == "The butler"
    assert not is_translated(edited.translations, "zh-hans", 3)
    assert translation_gaps(edited.translations, ["zh-hans"], 3) == ["zh-hans (out of date: options changed)"]
    # An edit that touches the clue graph only leaves a current translation as it is.
    reverted = item_revert(item_id=item.pk, revision_number=1, base_version=edited.version)
    assert reverted.translations == {"zh-hans": zh} and is_translated(reverted.translations, "zh-hans", 3)
    clue = item_update(item_id=item.pk, base_version=reverted.version, changes={"evidence": "mud -> outside"})
    assert clue.translations == {"zh-hans": zh}
    # A translation brought up to date (in the admin: the corrected text, without the mark) is shown again.
    fixed = item_update(item_id=item.pk, base_version=clue.version, changes={
        "options": ["The gardener", "The cook", "The butler"], "answer_index": 2,
        "translations": {"zh-hans": {**zh, "options": ["园丁", "厨师", "管家"]}}})
    assert is_translated(fixed.translations, "zh-hans", 3)


def test_an_import_that_changes_the_original_marks_the_translations_it_does_not_carry():
    from annotation.services import item_update

    import_text(json.dumps(GOOD) + "\n", source="tri")
    item = Item.objects.get(source="tri")
    zh = {"context": "管家", "question": "谁？", "options": ["管家", "厨师"]}
    item = item_update(item_id=item.pk, base_version=item.version, changes={"translations": {"zh-hans": zh}})
    report = import_text(json.dumps(dict(GOOD, options=["The cook", "The butler"], answer=1)) + "\n", source="tri",
                         curated="overwrite")
    assert report.updated == 1
    item.refresh_from_db()
    assert item.translations["zh-hans"]["out_of_date"] == "options"
    assert {key: item.translations["zh-hans"][key] for key in zh} == zh
    assert item.revisions.order_by("number").last().changed_fields == ["options", "answer_index", "translations"]
    # The file restoring the original brings the translation up to date again, in that revision.
    report = import_text(json.dumps(GOOD) + "\n", source="tri", curated="overwrite")
    item.refresh_from_db()
    assert report.updated == 1 and item.translations == {"zh-hans": zh}
    assert item.revisions.order_by("number").last().changed_fields == ["options", "answer_index", "translations"]


def test_an_edit_restoring_the_original_brings_its_translations_back_to_what_participants_see():
    """Left from the translations' issue: a rewrite reorders the options (the translation is marked out of date),
    then a second rewrite puts them back by hand, not by a revert: the translation is current again, shown and
    counted; a translation marked before its source was recorded stays marked."""
    from annotation.services import item_create, item_update
    from studies.content import is_translated

    zh = {"context": "管家的靴子上有泥。", "question": "谁去过花园？", "options": ["管家", "厨师", "园丁"]}
    original = ["The butler", "The cook", "The gardener"]
    item = item_create(source="tr2", external_id="1", split="dev", content={
        "context": "The butler had mud on his boots.", "question": "Who was in the garden?",
        "options": original, "answer_index": 0, "translations": {"zh-hans": zh}})
    edited = item_update(item_id=item.pk, base_version=item.version, changes={
        "options": ["The gardener", "The cook", "The butler"], "answer_index": 2})
    assert not is_translated(edited.translations, "zh-hans", 3)
    retold = item_update(item_id=item.pk, base_version=edited.version, changes={"question": "Who was outside?"})
    assert retold.translations["zh-hans"]["out_of_date"] == "question, options"
    back = item_update(item_id=item.pk, base_version=retold.version, changes={"options": original, "answer_index": 0})
    assert back.translations["zh-hans"]["out_of_date"] == "question"  # the question still differs
    restored = item_update(item_id=item.pk, base_version=back.version, changes={"question": "Who was in the garden?"})
    assert restored.translations == {"zh-hans": zh} and is_translated(restored.translations, "zh-hans", 3)
    assert restored.revisions.get(number=restored.version).changed_fields == ["question", "translations"]
    legacy = item_update(item_id=item.pk, base_version=restored.version, changes={
        "translations": {"zh-hans": {**zh, "out_of_date": "options"}}})
    again = item_update(item_id=item.pk, base_version=legacy.version, changes={"context": "Mud on his boots."})
    assert again.translations == {"zh-hans": {**zh, "out_of_date": "options"}}
