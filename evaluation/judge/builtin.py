"""The built-in offline judge: no network, deterministic, good enough to run the whole flow (no Django inside).

- free-text: the answer is compared with every option by :func:`similarity` (content-word
  stems F1 plus a character-sequence ratio); the most similar option is the judge's
  reading. ``correct`` when it is the gold option. The belief is a logistic of the
  similarity margin, ``1 / (1 + exp(-margin / MARGIN_SCALE))``: the gap between the best
  option and the runner-up (correct) or the gold option (incorrect). A tie is 0.5 (a coin
  between two options), a clear margin near 1; with the scale 0.05, the median margin of the
  lexical model's free answers on the test split (0.025) is 0.62 and the 90th percentile
  (0.165) 0.96, so the beliefs spread and triage can order by them. It is a heuristic, not a
  calibrated probability: the trust page measures its calibration from people's reviews. An
  answer sharing no content word with any option gives ``incorrect`` with **no belief**
  (the similarity says nothing): the label is unscored, its verdict kept in the payload, and
  triage hands it out first.
- screening: word and pattern heuristics per Table 7 criterion (media words, the share
  of numbers and operators, abstract-science words without people, a gold option that
  is empty or repeated, group generalisations); ``keep`` is ``delete`` when a
  criterion holds.
- clue graph: the context sentences that share most words with the question and the
  gold answer, quoted (anchored exactly), each implying what it shares, and one step
  from them to the answer; belief = the share of the answer's words they cover.
"""
from __future__ import annotations

import hashlib
import math
import re
from difflib import SequenceMatcher

from annotation.text import content_words, normalize, sentences, stem
from evaluation.judge.specs import CORRECT, DELETE, INCORRECT, KEEP, NO, SCREENING_CRITERIA, YES, JudgeInput

BUILTIN_VERSION = "2"  # 2: free-text belief from a logistic of the similarity margin, no belief without overlap
#: The similarity margin at which the free-text belief is 1 / (1 + e^-1) = 0.73.
MARGIN_SCALE = 0.05

_MEDIA = re.compile(r"\b(listen(?:ing)? to|audio|sound clip|music clip|recording|the (?:picture|image|photo|photograph|"
                    r"figure|diagram|video|map) (?:below|above|shown)|shown (?:below|above|in the (?:picture|image|figure))|"
                    r"see the (?:picture|image|figure|diagram|video)|watch the video)\b", re.IGNORECASE)
_MATH_WORD = re.compile(r"\b(equation|calculate|calculation|compute|theorem|proof|integer|remainder|divisible|"
                        r"probability|sum of|product of|square root|formula|digits?|multiply|divide)\b", re.IGNORECASE)
_MATH_SYMBOL = re.compile(r"[=+×÷^√%<>*/]|\d")
_ABSTRACT = re.compile(r"\b(quantum|theorem|molecule|molecular|algorithm|integral|derivative|electron|photon|"
                       r"particle|axiom|lemma|polynomial|matrix|vector|physics experiment)\b", re.IGNORECASE)
_PEOPLE = re.compile(r"\b(he|she|his|her|they|man|woman|boy|girl|police|detective|friend|family|mother|father|"
                     r"wife|husband|neighbor|neighbour|house|home|shop|street|village|office|school)\b", re.IGNORECASE)
_GROUPS = (r"women|men|girls|boys|blacks|whites|jews|muslims|christians|hindus|buddhists|asians|africans|arabs|"
           r"europeans|americans|chinese|japanese|indians|mexicans|immigrants|foreigners|gays")
_BIAS = re.compile(rf"\b(?:all|every|most|typical)\s+(?:{_GROUPS})\s+(?:are|is|were|always|never)\b|"
                   rf"\b(?:{_GROUPS})\s+are\s+(?:lazy|stupid|dirty|criminals?|inferior|greedy|violent|liars)\b",
                   re.IGNORECASE)


def builtin_hash(task: str) -> str:
    """The "prompt hash" of the built-in judge for a task (its rules, versioned)."""
    return hashlib.sha256(f"builtin-judge:{BUILTIN_VERSION}:{task}".encode()).hexdigest()[:12]


def _stems(text: str) -> set[str]:
    return {stem(word) for word in content_words(text)}


def similarity(answer: str, option: str) -> float:
    """0..1: 0.75 x F1 of the content-word stems + 0.25 x the character-sequence ratio of the normalised texts."""
    a, b = _stems(answer), _stems(option)
    shared = len(a & b)
    f1 = 2 * shared / (len(a) + len(b)) if shared else 0.0
    ratio = SequenceMatcher(None, normalize(answer), normalize(option), autojunk=False).ratio()
    return 0.75 * f1 + 0.25 * ratio


def margin_belief(margin: float) -> float:
    """The belief for a similarity margin (>= 0): 0.5 at a tie, towards 1 as the margin grows."""
    return 1.0 / (1.0 + math.exp(-max(0.0, margin) / MARGIN_SCALE))


def judge_free_text(data: JudgeInput) -> tuple[str, float | None, dict, str]:
    """(label, belief, payload, rationale) for one free-text answer; belief None when the answer shares no content
    word with any option."""
    scores = [similarity(data.answer, option) for option in data.options]
    if not scores or not _stems(data.answer) & set().union(*(_stems(o) for o in data.options)):
        return (INCORRECT, None, {"matched_option": None},
                "The answer shares no content word with any option: no belief either way.")
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    if best == data.answer_index:
        other = max((s for i, s in enumerate(scores) if i != best), default=0.0)
        label, rationale = CORRECT, f"Most similar to the gold option {best + 1}."
    else:
        other = scores[data.answer_index] if 0 <= data.answer_index < len(scores) else 0.0
        label, rationale = INCORRECT, f"Most similar to option {best + 1}, not the gold option."
    margin = scores[best] - other
    payload = {"matched_option": best, "similarities": [round(s, 4) for s in scores], "margin": round(margin, 4)}
    return label, margin_belief(margin), payload, rationale


def _screen_criteria(data: JudgeInput) -> dict[str, tuple[str, float]]:
    text = f"{data.context}\n{data.question}"
    found: dict[str, tuple[str, float]] = {}
    media = len(_MEDIA.findall(text))
    found["1.1"] = (YES, min(0.9, 0.6 + 0.1 * media)) if media else (NO, 0.9)
    symbol_share = len(_MATH_SYMBOL.findall(text)) / max(1, len(text.split()))
    math_words = len(_MATH_WORD.findall(text))
    heavy = symbol_share > 0.3 or math_words >= 3
    found["1.2"] = (YES, min(0.9, 0.55 + 0.1 * math_words + symbol_share)) if heavy else (NO, 0.85 if math_words else 0.9)
    abstract, people = len(_ABSTRACT.findall(text)), len(_PEOPLE.findall(text))
    no_daily = abstract >= 2 and people < 2
    found["1.3"] = (YES, 0.7) if no_daily else (NO, 0.9 if people >= 2 else 0.7)
    gold = data.gold_answer.strip()
    repeated = gold and sum(normalize(o) == normalize(gold) for o in data.options) > 1
    found["1.4"] = (YES, 0.9) if not gold or repeated else (NO, 0.7)
    bias = len(_BIAS.findall(text))
    found["1.5"] = (YES, min(0.9, 0.65 + 0.1 * bias)) if bias else (NO, 0.9)
    return found


def screen(data: JudgeInput) -> tuple[list[tuple[str, str, float]], str]:
    """([(aspect, label, belief)] for 1.1-1.5 and keep, rationale)."""
    criteria = _screen_criteria(data)
    rows = [(aspect, *criteria[aspect]) for aspect in SCREENING_CRITERIA]
    flagged = [(aspect, belief) for aspect, label, belief in rows if label == YES]
    if flagged:
        rows.append(("keep", DELETE, max(belief for _, belief in flagged)))
        rationale = "Flagged by the heuristics for " + ", ".join(aspect for aspect, _ in flagged) + "."
    else:
        rows.append(("keep", KEEP, min(belief for _, _, belief in rows)))
        rationale = "No criterion flagged by the heuristics."
    return rows, rationale


def draft_clue_graph(data: JudgeInput, *, max_clues: int = 3) -> tuple[list[tuple[str, str]], list[tuple[tuple[str, ...], str]], float]:
    """(clues [(quote, implication)], steps [(inputs, output)], belief) of a heuristic draft."""
    target = _stems(data.question) | _stems(data.gold_answer)
    answer_stems = _stems(data.gold_answer)
    found = sentences(data.context) or ([data.context.strip()] if data.context.strip() else [])
    ranked = sorted(range(len(found)), key=lambda i: (-len(_stems(found[i]) & target), i))
    chosen = sorted(i for i in ranked[:max_clues] if _stems(found[i]) & target) or ranked[:1]
    clues = []
    for i in chosen:
        shared = sorted(w for w in content_words(found[i]) if stem(w) in target)
        implication = ("It concerns " + ", ".join(shared[:6]) + ".") if shared else "It sets the scene."
        clues.append((found[i], implication))
    steps = [(tuple(implication for _, implication in clues), data.gold_answer.strip() or "The answer.")] if clues else []
    covered = set().union(*(_stems(found[i]) for i in chosen)) if chosen else set()
    belief = len(answer_stems & covered) / len(answer_stems) if answer_stems else 0.0
    return clues, steps, round(belief, 6)
