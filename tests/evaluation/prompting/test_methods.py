"""Prompting methods, prompt rendering, option permutation and demonstrations (no database)."""
import asyncio
import re

import pytest

from evaluation.errors import UnknownMethod
from evaluation.prompting import prompts
from evaluation.prompting.answer_reading import OK
from evaluation.prompting.methods import (
    ASSEMBLY_VERSION,
    METHODS,
    AutoCoT,
    Completion,
    Naive,
    NaiveAnswer,
    NaiveKeyInfo,
    SelfConsistency,
    get_method,
    longest_chain,
    majority_vote,
)
from evaluation.prompting.prompts import ItemView, choose_demonstrations, permutation, present
from tests.conftest import PAPER_PATH

ITEM = ItemView(
    id=7, context="Tom came home at nine. The window was broken from inside. Mud was on the stairs.",
    question="Who broke the window?", options=("Tom", "The thief", "The cat", "Nobody"), answer_index=0,
    key_information=("The window was broken from inside", "Mud was on the stairs"),
    reasoning="After correlating the clues:\nbroken from inside -> someone inside\nsomeone inside -> Tom",
)
DEMO = ItemView(id=3, context="Ann lost a ring.", question="Where is the ring?", options=("Sink", "Bag"),
                answer_index=1, key_information=("lost a ring",), reasoning="ring -> bag")

ISSUE_METHODS = {
    "naive", "naive-3shot", "self-cot", "auto-cot-3shot", "self-consistency", "complexity-cot", "ps-cot",
    "detective-thinking", "detective-thinking-multiround", "naive-key-info", "naive-key-info-3shot",
    "naive-answer", "naive-answer-3shot", "free-text",
}


class Recorder:
    """A scripted model: records every call and replies from a list (then repeats the last)."""

    def __init__(self, *replies: str):
        self.replies = list(replies) or ["### Key Information:\nMud was on the stairs\n### Answer: 1"]
        self.calls: list[tuple[list, str]] = []

    async def __call__(self, messages, call_key):
        self.calls.append((messages, call_key))
        text = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        return Completion(text=text, tokens_in=10, tokens_out=5, latency_s=0.01)


def solve(name, recorder, *, k=None, permute=False, demos=(DEMO, DEMO, DEMO)):
    method = get_method(name)
    shown = present(ITEM, seed=1, permute=permute)
    shown_demos = tuple(present(d, seed=1, permute=permute) for d in demos)
    return asyncio.run(method.solve(shown, shown_demos, recorder, k=k or method.default_k)), shown


def test_registry_has_every_method_of_the_issue():
    assert set(METHODS) == ISSUE_METHODS
    for method in METHODS.values():
        assert len(method.version()) == 12
    assert len({method.version() for method in METHODS.values()}) == len(METHODS)
    with pytest.raises(UnknownMethod) as refused:
        get_method("no-such-method")
    assert refused.value.field == "method" and refused.value.http_status == 400


# The prompt versions stored on runs before shots became a parameter: the same name must give the same version.
STORED_VERSIONS = {
    "naive": "e81a949968df", "naive-3shot": "7e43ec648c9c", "auto-cot-3shot": "1006314c109e",
    "naive-key-info-3shot": "bd07ec9e0c88", "naive-answer-3shot": "31d17c58fe12",
}


def test_shots_are_a_parameter_of_the_base_method():
    for name, base in [("naive-3shot", Naive), ("naive-key-info-3shot", NaiveKeyInfo),
                       ("naive-answer-3shot", NaiveAnswer), ("auto-cot-3shot", AutoCoT)]:
        method = get_method(name)
        assert type(method) is base and method.shots == 3
        assert method.name == name and method.label.endswith(" (3-shot)")
    assert Naive(shots=3).name == "naive-3shot" and Naive().name == "naive" and Naive().shots == 0
    assert {name: METHODS[name].version() for name in STORED_VERSIONS} == STORED_VERSIONS
    with pytest.raises(ValueError):
        SelfConsistency(shots=3)  # its prompt takes no demonstrations
    with pytest.raises(ValueError):
        AutoCoT(shots=0)  # Auto-CoT is defined by its demonstrations


def test_naive_prompt_follows_table_10_with_numbered_options():
    recorder = Recorder()
    outcome, _ = solve("naive", recorder)
    (messages, key), = recorder.calls
    text = messages[-1]["content"]
    assert len(messages) == 1 and key == "main"
    assert "### Context:\n" + ITEM.context in text
    assert "### Options:\n1. Tom\n2. The thief\n3. The cat\n4. Nobody" in text
    assert text.rstrip().endswith("### Answer:\n1/2/3/4")
    assert outcome.answer.status == OK and outcome.answer.index == 0
    assert outcome.key_information == "Mud was on the stairs"
    assert outcome.tokens_in == 10 and outcome.tokens_out == 5


def test_permutation_is_seeded_per_item_and_the_answer_is_remapped():
    shown = present(ITEM, seed=5, permute=True)
    assert shown.order == permutation(seed=5, item_id=7, count=4)
    assert shown.options[shown.answer_shown] == "Tom"
    assert shown.original_index(shown.answer_shown) == 0
    assert present(ITEM, seed=5, permute=True).order == shown.order  # reproducible
    orders = {permutation(seed=s, item_id=7, count=4) for s in range(30)}
    assert len(orders) > 5
    # Over many items the correct option lands first about a quarter of the time.
    first = sum(permutation(seed=1, item_id=i, count=4)[0] == 0 for i in range(4000)) / 4000
    assert 0.22 < first < 0.28


def test_demonstrations_come_from_the_pool_by_seed_and_never_the_item_itself():
    pool = list(range(1, 40))
    demos = choose_demonstrations(pool_ids=pool, seed=3, exclude=5)
    assert len(demos) == 3 and 5 not in demos
    assert demos == choose_demonstrations(pool_ids=pool, seed=3, exclude=5)
    assert choose_demonstrations(pool_ids=pool, seed=4, exclude=5) != demos
    for exclude in pool:
        assert exclude not in choose_demonstrations(pool_ids=pool, seed=3, exclude=exclude)


def test_three_shot_methods_put_demonstrations_as_chat_turns():
    recorder = Recorder()
    solve("naive-3shot", recorder)
    (messages, _), = recorder.calls
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3 + ["user"]
    assert "### Answer:\n2" in messages[1]["content"]  # the demo's gold answer (option 2)
    assert "lost a ring" in messages[1]["content"]  # ... and its gold key information


def test_auto_cot_puts_worked_demonstrations_in_one_prompt():
    recorder = Recorder()
    solve("auto-cot-3shot", recorder)
    (messages, _), = recorder.calls
    assert len(messages) == 1
    text = messages[0]["content"]
    assert text.startswith("### Demonstration") and text.count("### Thought:\nring -> bag") == 3


def test_extra_information_methods_give_key_information_or_answer():
    recorder = Recorder()
    solve("naive-key-info", recorder)
    assert "### Key Information:\nThe window was broken from inside\nMud was on the stairs" in recorder.calls[0][0][0]["content"]
    recorder = Recorder()
    solve("naive-answer", recorder, permute=True)
    shown = present(ITEM, seed=1, permute=True)
    assert f"### Answer: {shown.answer_label}\n" in recorder.calls[0][0][0]["content"]


def test_self_consistency_samples_k_times_and_votes():
    recorder = Recorder("### Answer: 2", "### Key Information:\nx\n### Answer: 3", "### Answer: 3", "### Answer: 1/2", "### Answer: 2")
    outcome, _ = solve("self-consistency", recorder, k=5)
    assert [key for _, key in recorder.calls] == [f"sc-{i}" for i in range(5)]
    assert outcome.answer.index == 1  # 2 and 3 tie with two votes each: the earliest (2) wins
    recorder = Recorder("### Answer: 3", "### Key Information:\nthe mud\n### Answer: 4", "### Answer: 4")
    outcome, _ = solve("self-consistency", recorder, k=3)
    assert outcome.answer.index == 3 and outcome.key_information == "the mud"
    assert len(outcome.exchanges) == 3


def test_complexity_cot_answers_with_the_longest_chain():
    recorder = Recorder("### Thought:\na\n### Answer: 1", "### Thought:\na\nb\nc\n### Answer: 2",
                        "### Thought:\na\nb\n### Answer: 3", "### Key Information:\nk\n### Answer: 4")
    outcome, _ = solve("complexity-cot", recorder, k=3)
    assert [key for _, key in recorder.calls] == ["cot-0", "cot-1", "cot-2", "answer"]
    final = recorder.calls[-1][0][0]["content"]
    assert "### Chain of thought:\na\nb\nc\n" in final
    assert outcome.answer.index == 3
    assert longest_chain(["a\nb", "abcdef", "x\ny\n"]) == "x\ny\n"


def test_detective_thinking_multiround_uses_successive_turns():
    recorder = Recorder("### Clues:\nc", "### Connection:\nx", "### Thought:\nt", "### Summarize:\ns",
                        "### Key Information:\nk\n### Answer: 2")
    outcome, _ = solve("detective-thinking-multiround", recorder)
    assert [key for _, key in recorder.calls] == ["mr-1", "mr-2", "mr-3", "mr-4", "mr-5"]
    last_messages = recorder.calls[-1][0]
    assert [m["role"] for m in last_messages] == ["user", "assistant"] * 4 + ["user"]
    assert outcome.answer.index == 1 and len(outcome.exchanges) == 5


def test_free_text_hides_the_options():
    recorder = Recorder("### Key Information:\nthe mud\n### Answer:\nTom broke it.")
    outcome, _ = solve("free-text", recorder)
    text = recorder.calls[0][0][0]["content"]
    assert "### Options" not in text and "The thief" not in text
    assert outcome.answer is None and outcome.free_answer == "Tom broke it."


def test_prompt_version_hashes_the_templates():
    naive = get_method("naive")
    assert naive.version() != get_method("naive-3shot").version()
    salt = f"naive:{ASSEMBLY_VERSION}"
    assert naive.version() == prompts.templates_hash(naive.templates, salt=salt)
    changed = prompts.templates_hash(naive.templates, salt=salt,
                                     read=lambda name: prompts.template_text(name) + " (edited)")
    assert changed != naive.version()  # an edited template text gives another version


def test_majority_vote():
    assert majority_vote([None, 2, 1, 1, 2]) == 2
    assert majority_vote([None, None]) is None


PAPER = PAPER_PATH
PAPER_TABLES = {10: "naive", 11: "naive_key_info", 12: "naive_answer", 13: "self_cot", 14: "auto_cot",
                15: "self_consistency", 16: "complexity_cot", 17: "ps_cot", 18: "detective_thinking"}


@pytest.mark.parametrize("table, template", PAPER_TABLES.items())
def test_prompt_templates_are_word_for_word_the_papers(table, template):
    """Tables 10-18 of the paper, compared word by word (layout aside); inputs and `1/2/3/4` are placeholders."""
    if not PAPER.exists():
        pytest.skip(f"paper text not found at {PAPER}")
    paper = PAPER.read_text(encoding="utf-8")
    end = paper.index(f"Table {table}: Prompt")
    marker = "<commentblockmarker>###</commentblockmarker>"
    start = paper.rindex(marker, 0, end) + len(marker)

    def words(text):
        text = re.sub(r"!\s?<INPUT \d>!|\{[a-z_]+\}|1/2/3/4", "{X}", text)
        return text.split()

    assert words(prompts.template_text(template)) == words(paper[start:end])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_methods_kept_prompt_is_the_prompt_it_renders(name):
    """Kept per shown item: the same text as rendering it again, for every method, order and label style, and a
    different shown item (another order, another item) never gets another's prompt."""
    method = get_method(name)
    shown_items = [present(item, seed=seed, permute=permute, label_style=style)
                   for item in (ITEM, DEMO) for seed in (0, 1) for permute in (False, True)
                   for style in ("numbers", "letters")]
    try:
        method.render_prompt(shown_items[0])
    except KeyError:  # a method whose template needs more than the item (its demonstrations, its own chains)
        with pytest.raises(KeyError):
            method.prompt(shown_items[0])
        return
    for _ in range(2):  # rendered, then kept
        for shown in shown_items:
            assert method.prompt(shown) == method.render_prompt(shown)
    listed = present(ItemView(**{**ITEM.__dict__, "options": list(ITEM.options)}), seed=0, permute=False)
    assert method.prompt(listed) == method.render_prompt(listed)  # unhashable: rendered, not kept


def test_kept_prompts_are_bounded(monkeypatch):
    from evaluation.prompting import methods

    monkeypatch.setattr(methods, "PROMPTS_KEPT", 5)
    method = Naive()
    for item_id in range(12):
        item = ItemView(**{**ITEM.__dict__, "id": item_id, "question": f"Who broke window {item_id}?"})
        assert f"window {item_id}?" in method.prompt(present(item, seed=0, permute=False))
        assert len(method._prompts) <= 5
