"""export_finetune writes Detective Thinking chats whose assistant turn parses back to the gold answer."""
import io
import json

import pytest
from django.core.management import call_command

from annotation.clue_graph import gold_key_information
from annotation.models import Item
from evaluation.prompting.answer_reading import parse_answer, parse_key_information, split_sections
from tests.support.items import import_items

pytestmark = pytest.mark.django_db


def test_export_finetune_train_split(detectbench_dir, tmp_path):
    import_items(detectbench_dir / "train.jsonl", split="train", limit=25)
    out = tmp_path / "dt.jsonl"
    call_command("export_finetune", "--split", "train", "--out", str(out), stdout=io.StringIO())
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 25
    items = {i.external_id: i for i in Item.objects.filter(split="train")}
    for record in records:
        item = items[record["id"]]
        user, assistant = record["messages"]
        assert user["role"] == "user" and "### Clues: Feel free to summarize" in user["content"]
        assert item.context in user["content"]
        assert assistant["role"] == "assistant"
        names = [s.name for s in split_sections(assistant["content"])]
        assert names == ["clues", "connection", "thought", "summarize", "key information", "answer"]
        assert parse_answer(assistant["content"], item.options).index == item.answer_index
        assert parse_key_information(assistant["content"]) == "\n".join(gold_key_information(item.evidence))
    permuted = tmp_path / "dt-permuted.jsonl"
    call_command("export_finetune", "--split", "train", "--out", str(permuted), "--permute-options", stdout=io.StringIO())
    answers = [parse_answer(json.loads(l)["messages"][1]["content"], 4).index for l in permuted.read_text().splitlines()]
    assert len(set(answers)) > 2
