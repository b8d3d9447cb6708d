"""The three judge tasks: what is judged, the aspects and verdicts of each, and its prompt (no Django inside).

- ``free-text``: a result of the free-text method; aspect ``verdict``: is the answer the
  same as the gold option (``correct`` / ``incorrect``)?
- ``screening``: an item; aspects ``1.1`` .. ``1.5`` (paper Table 7, question
  verification: ``yes`` = the criterion holds, the item should be deleted) and ``keep``
  (``keep`` / ``delete``), each with its own belief;
- ``clue-graph``: an item; aspect ``graph``, label ``draft``, a draft clue graph as payload.
"""
from __future__ import annotations

from dataclasses import dataclass

from annotation.screening import SCREENING_CRITERIA
from evaluation.judge.parsing import AspectSpec

FREE_TEXT, SCREENING, CLUE_GRAPH = "free-text", "screening", "clue-graph"
JUDGE_TASKS = (FREE_TEXT, SCREENING, CLUE_GRAPH)

CORRECT, INCORRECT = "correct", "incorrect"
YES, NO = "yes", "no"
KEEP, DELETE = "keep", "delete"
DRAFT = "draft"


@dataclass(frozen=True)
class JudgeInput:
    """What the judge sees of one target (a plain copy of the item, plus the answer to grade)."""

    target: str  # "result:<id>" or "item:<id>"
    item_id: int
    item_version: int
    context: str
    question: str
    options: tuple[str, ...]
    answer_index: int
    evidence: str = ""
    reasoning: str = ""
    answer: str = ""  # free-text: the answer to grade

    @property
    def gold_answer(self) -> str:
        return self.options[self.answer_index] if 0 <= self.answer_index < len(self.options) else ""


@dataclass(frozen=True)
class TaskSpec:
    name: str
    template: str
    aspects: tuple[AspectSpec, ...]

    @property
    def aspect_names(self) -> tuple[str, ...]:
        return tuple(a.aspect for a in self.aspects)

    def choices(self, aspect: str) -> tuple[str, ...]:
        return next(a.choices for a in self.aspects if a.aspect == aspect)

    def values(self, data: JudgeInput) -> dict[str, str]:
        """The template's placeholders for one target."""
        wrong = [f"- {text}" for i, text in enumerate(data.options) if i != data.answer_index]
        graph = "\n".join(part for part in (data.evidence.strip(), data.reasoning.strip()) if part)
        return {
            "context": data.context, "question": data.question, "gold_answer": data.gold_answer,
            "options": "\n".join(f"{i + 1}. {text}" for i, text in enumerate(data.options)),
            "wrong_options": "\n".join(wrong) or "(none)", "clue_graph": graph or "(none)",
            "answer": data.answer,
        }


TASKS: dict[str, TaskSpec] = {
    FREE_TEXT: TaskSpec(FREE_TEXT, "free_text_verdict",
                        (AspectSpec("verdict", (CORRECT, INCORRECT), ("verdict",), ("confidence",)),)),
    SCREENING: TaskSpec(SCREENING, "screening", tuple(
        [AspectSpec(c, (YES, NO), (c, "verdict"), (c, "confidence")) for c in SCREENING_CRITERIA]
        + [AspectSpec("keep", (KEEP, DELETE), ("keep", "verdict"), ("keep", "confidence"))]
    )),
    CLUE_GRAPH: TaskSpec(CLUE_GRAPH, "clue_graph", (AspectSpec("graph", (DRAFT,), (), ("confidence",)),)),
}


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown judge task {name!r}; choose from {', '.join(TASKS)}") from None
