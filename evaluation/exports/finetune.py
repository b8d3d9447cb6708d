"""Detective Thinking Finetune data (paper §4.2) from items' clue graphs (no Django inside).

One chat per item: the Detective Thinking prompt (Table 18) as the user turn, and an
assistant turn assembled from the clue graph:

- Clues: the left-hand clues of the evidence lines;
- Connection: each clue with what it implies (``clue -> implication``);
- Thought: the multi-hop reasoning steps (``A + B -> C``);
- Summarize: the last conclusion and the chosen option;
- Key Information: the gold key information (the clues);
- Answer: the correct option's label.
"""
from __future__ import annotations

from annotation.clue_graph import gold_key_information, parse_clue_graph
from evaluation.prompting.methods import get_method
from evaluation.prompting.prompts import Presented


def assistant_turn(shown: Presented, *, evidence: str, reasoning: str) -> str:
    graph = parse_clue_graph(evidence, reasoning)
    clues = gold_key_information(evidence)
    connections = [f"{c.text} -> {c.implication}" for c in graph.clues] or clues
    steps = [f"{' + '.join(s.inputs)} -> {s.output}" for s in graph.all_steps]
    conclusion = graph.all_steps[-1].output if graph.all_steps else (graph.clues[-1].implication if graph.clues else "")
    answer_text = shown.options[shown.answer_shown]
    summary = f"{conclusion.rstrip('.')}. " if conclusion else ""
    summary += f"Therefore the answer is option {shown.answer_label}: {answer_text}"
    return "\n".join([
        "### Clues:", *[f"{i}. {c}" for i, c in enumerate(clues, 1)], "",
        "### Connection:", *connections, "",
        "### Thought:", *(steps or [reasoning.strip()]), "",
        "### Summarize:", summary, "",
        "### Key Information:", *clues, "",
        "### Answer:", shown.answer_label,
    ])


def finetune_record(shown: Presented, *, evidence: str, reasoning: str) -> dict:
    prompt = get_method("detective-thinking").prompt(shown)
    return {"messages": [{"role": "user", "content": prompt},
                         {"role": "assistant", "content": assistant_turn(shown, evidence=evidence, reasoning=reasoning)}]}

