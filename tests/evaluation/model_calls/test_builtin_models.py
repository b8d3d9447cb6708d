"""Built-in offline models (evaluation.model_calls.builtin_models, no database): they read the prompt like a model and answer in
the format; on the real test split their outputs stay exactly what they were before they shared annotation.text."""
import hashlib
import json

import pytest

from evaluation.model_calls.builtin_models import BUILTIN_MODELS, builtin_reply, count_tokens, read_prompt
from evaluation.prompting.answer_reading import OK, parse_answer
from evaluation.prompting.methods import get_method
from evaluation.prompting.prompts import ItemView, present

ITEM = ItemView(
    id=7, context="Tom came home at nine. The window was broken from inside. Mud was on the stairs.",
    question="Who broke the window?", options=("Tom", "The thief", "The cat", "Nobody"), answer_index=0,
    key_information=("The window was broken from inside", "Mud was on the stairs"), reasoning="",
)
DEMO = ItemView(id=3, context="Ann lost a ring.", question="Where is the ring?", options=("Sink", "Bag"),
                answer_index=1, key_information=("lost a ring",), reasoning="ring -> bag")

# The outputs of the three built-ins (naive prompt, original and permuted options, seed 3) on the 1,196 real
# test items, as written by the module before it used annotation.text: any change of their answers shows here.
REAL_OUTPUTS_SHA256 = "c86541b762f36b56868ed8df3bf2a9e06bc7925e5eba00869241b7c8b0cf487e"


def test_builtins_read_the_prompt_and_answer_in_the_format():
    shown = present(ITEM, seed=1, permute=False)
    messages = get_method("naive").messages(shown, ())
    context, question, options = read_prompt(messages)
    assert context == ITEM.context and question == ITEM.question and [t for _, t in options] == list(ITEM.options)
    first = builtin_reply("first-option", messages, seed=0)
    assert parse_answer(first, 4).index == 0
    assert "### Key Information:" in first
    randoms = {parse_answer(builtin_reply("random", messages, seed=s), 4).index for s in range(40)}
    assert randoms == {0, 1, 2, 3}
    assert builtin_reply("random", messages, seed=3) == builtin_reply("random", messages, seed=3)
    lexical = builtin_reply("lexical", messages, seed=0)
    assert parse_answer(lexical, 4).status == OK
    with pytest.raises(ValueError):
        builtin_reply("gpt-9", messages, seed=0)


def test_builtins_answer_for_the_item_not_the_demonstrations():
    shown = present(ITEM, seed=1, permute=True)
    messages = get_method("auto-cot-3shot").messages(shown, (present(DEMO, seed=1, permute=False),) * 3)
    _, _, options = read_prompt(messages)
    assert [t for _, t in options] == shown.options


def test_lexical_reader_picks_the_option_the_context_talks_about_and_quotes_it():
    item = ItemView(id=1, context="It rained at night. The gardener's boots were muddy. Everyone else was asleep.",
                    question="Who walked in the garden?", options=("The cook", "The gardener", "Nobody"),
                    answer_index=1, key_information=(), reasoning="")
    reply = builtin_reply("lexical", get_method("naive").messages(present(item, seed=1, permute=False), ()), seed=0)
    assert parse_answer(reply, 3).index == 1
    assert "The gardener's boots were muddy." in reply


def test_lexical_reader_reads_chinese_by_character():
    """Chinese text has no spaces: each character is a word (annotation.text), so a Chinese option can match."""
    item = ItemView(id=2, context="窗户是从里面打破的。花园里有泥脚印。", question="谁打破了窗户？",
                    options=("猫", "从里面的人", "风"), answer_index=1, key_information=(), reasoning="")
    reply = builtin_reply("lexical", get_method("naive").messages(present(item, seed=1, permute=False), ()), seed=0)
    assert parse_answer(reply, 3).index == 1


def test_token_count_counts_words_punctuation_and_each_chinese_character():
    assert count_tokens("Tom's window, broken!") == 7  # Tom / ' / s / window / , / broken / !
    assert count_tokens("窗户破了") == 4
    assert count_tokens("") == 0


def test_outputs_on_the_real_test_split_are_unchanged(detectbench_dir):
    digest = hashlib.sha256()
    for line in (detectbench_dir / "test.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        item = ItemView(id=record["id"], context=record["context"], question=record["question"],
                        options=tuple(record["options"]), answer_index=record["answer"], key_information=(),
                        reasoning="")
        for permute in (False, True):
            messages = get_method("naive").messages(present(item, seed=7, permute=permute), ())
            for model in BUILTIN_MODELS:
                digest.update(builtin_reply(model, messages, seed=3).encode() + b"\0")
    assert digest.hexdigest() == REAL_OUTPUTS_SHA256
