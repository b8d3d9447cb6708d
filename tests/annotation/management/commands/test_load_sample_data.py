"""The original sample puzzles shipped in sample_data/ load cleanly and are well-formed."""
import io

import pytest
from django.core.management import call_command

from annotation import clue_graph
from annotation.models import Item

pytestmark = pytest.mark.django_db


def _load() -> str:
    out = io.StringIO()
    call_command("load_sample_data", stdout=out)
    return out.getvalue()


def test_sample_data_loads_idempotently_with_translations():
    first = _load()
    assert "train.jsonl: created 6" in first and "test.jsonl: created 24" in first
    assert "translations: 15 updated" in first
    second = _load()
    assert "unchanged 6" in second and "unchanged 24" in second and "translations: 0 updated" in second
    assert Item.objects.filter(source="sample").count() == 30
    translated = Item.objects.get(source="sample", external_id="9001").translations["zh-hans"]
    assert set(translated) == {"context", "question", "options"} and len(translated["options"]) == 4


def test_sample_clues_are_verbatim_and_answers_balanced():
    _load()
    positions = [0, 0, 0, 0]
    for item in Item.objects.filter(source="sample"):
        graph = clue_graph.parse_clue_graph(item.evidence, item.reasoning)
        assert graph.clues and graph.steps, item
        for anchor in clue_graph.anchor_clues(graph.clues, item.context):
            assert anchor is not None and anchor.exact, (item, anchor)
        positions[item.answer_index] += 1
    assert max(positions) - min(positions) <= 2  # unlike the real data, not skewed to the first option


def test_loading_again_keeps_every_edit_made_in_the_app(django_user_model):
    from annotation.services import item_update

    _load()
    editor = django_user_model.objects.create_user("annotator")
    item = Item.objects.get(source="sample", external_id="9001")
    edited = item_update(item_id=item.pk, base_version=item.version, user=editor, note="rewrite",
                         changes={"question": "Rewritten?", "translations": {**item.translations, "zh-hans": {
                             **item.translations["zh-hans"], "question": "改写？"}}})
    _load()
    item.refresh_from_db()
    assert (item.version, item.question, item.translations["zh-hans"]["question"]) == (
        edited.version, "Rewritten?", "改写？")


def test_demo_accounts_are_created_once_and_never_reset(django_user_model):
    call_command("create_demo_accounts", stdout=io.StringIO())
    user = django_user_model.objects.get(username="annotator")
    user.set_password("my-own-password")
    user.save()
    out = io.StringIO()
    call_command("create_demo_accounts", stdout=out)
    user.refresh_from_db()
    assert user.check_password("my-own-password") and "kept annotator" in out.getvalue()
    assert not django_user_model.objects.get(username="researcher").is_superuser


def test_loading_again_does_not_bring_back_a_translation_removed_in_the_app(django_user_model):
    """The lifecycle review: an annotator removed an item's Chinese translation; the next `make run` (this
    command) added it back, a new content version that made every model row of the item stale again."""
    from annotation.services import item_update

    _load()
    editor = django_user_model.objects.create_user("annotator")
    item = Item.objects.get(source="sample", external_id="9002")
    assert "zh-hans" in item.translations
    removed = item_update(item_id=item.pk, base_version=item.version, user=editor, note="wrong translation",
                          changes={"translations": {}})
    again = _load()
    item.refresh_from_db()
    assert "translations: 0 updated" in again
    assert (item.version, item.content_version, item.translations) == (removed.version, removed.content_version, {})
