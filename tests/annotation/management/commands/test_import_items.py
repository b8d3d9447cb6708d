"""`import_items`: options the items cannot hold are refused on the option, with its limit."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Item, ItemRevision
from foundation.errors import Invalid
from tests.support.items import import_text

pytestmark = pytest.mark.django_db

RECORD = {"id": 1, "context": "The butler had mud on his boots.", "question": "Who was in the garden?",
          "options": ["The butler", "The cook"], "answer": 0,
          "clue_graph": {"evidence": "mud -> outside", "multi_hop_reasoning": "outside -> The butler."}}


@pytest.mark.parametrize(("option", "value", "words"), [("--source", "s" * 300, "300 characters: at most 100"),
                                                        ("--split", "t" * 41, "41 characters: at most 40")])
def test_an_over_long_source_or_split_is_refused_naming_the_option_and_its_limit(tmp_path, option, value, words):
    """It printed a traceback ending in DataError (value too long for type character varying(100))."""
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    args = ["--split", "test", option, value] if option == "--source" else [option, value]
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert str(refused.value) == f"{option}: {words}"
    with pytest.raises(Invalid) as invalid:  # the service refuses it for every caller, on the field
        import_text(json.dumps(RECORD) + "\n", **{option[2:]: value})
    assert invalid.value.field == option[2:] and invalid.value.errors == {option[2:]: [words]}
    assert Item.objects.count() == 0 and ItemRevision.objects.count() == 0
    call_command("import_items", str(path), "--split", "t" * 40, "--source", "s" * 100, stdout=io.StringIO())
    assert Item.objects.get().split == "t" * 40  # the limits themselves are accepted
