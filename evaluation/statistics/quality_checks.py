"""Data-quality checks of items, as analyses see them (no Django inside; evaluation.selectors.quality reads the items).

Per item (a *flag* of one of :data:`FLAG_KINDS`):

- ``duplicate_options``: two options that are the same (annotation.item_checks.option_key: equal text, case,
  spacing and surrounding punctuation aside; the rewrite page refuses them);
- ``answer_text_repeated``: the correct option's text is also a wrong option, so an answer chosen by
  its text is ambiguous there;
- ``unanchored_clue``: an evidence line whose clue is not found in the context (annotation.clue_graph's
  best span scores below ANCHOR_MIN_SCORE);
- ``missing_translation``: a language other items of the split carry is missing, or lacks the
  context, the question or the same number of options.

Per split: the answer-position skew (how often each position is correct, against a uniform
draw: Pearson's chi-square, ``scipy.stats.chisquare``) and how many clues anchor exactly, fuzzily or
not at all.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from annotation.clue_graph import ANCHOR_MIN_SCORE, anchor_clues, parse_evidence
from annotation.item_checks import same_options
from annotation.translations import OUT_OF_DATE, is_out_of_date
from foundation.words import gettext, gettext_noop

FLAG_KINDS: dict[str, str] = {
    "duplicate_options": gettext_noop("two options are the same"),
    "answer_text_repeated": gettext_noop("the correct option's text is also a wrong option"),
    "unanchored_clue": gettext_noop("a clue (evidence line) is not found in the context"),
    "missing_translation": gettext_noop("a language other items carry is missing or incomplete"),
}
TRANSLATED_FIELDS = ("context", "question", "options")


def option_flags(options: Sequence[str], answer_index: int) -> dict[str, str]:
    flags = {}
    groups = same_options([str(o) for o in options])
    if groups:
        flags["duplicate_options"] = "; ".join("options " + " and ".join(str(i + 1) for i in g) for g in groups)
        answer_group = next((g for g in groups if answer_index in g), None)
        if answer_group:
            others = [i + 1 for i in answer_group if i != answer_index]
            flags["answer_text_repeated"] = (f"the correct option {answer_index + 1} is also option(s) "
                                             f"{', '.join(map(str, others))}")
    return flags


@dataclass(frozen=True)
class ClueAnchoring:
    clues: int
    exact: int
    unanchored: tuple[int, ...]  # 1-based clue numbers

    @property
    def fuzzy(self) -> int:
        return self.clues - self.exact - len(self.unanchored)


def clue_anchoring(evidence: str, context: str, *, min_score: float = ANCHOR_MIN_SCORE) -> ClueAnchoring:
    clues = parse_evidence(evidence)[0]
    anchors = anchor_clues(clues, context, min_score=min_score)
    return ClueAnchoring(clues=len(clues), exact=sum(1 for a in anchors if a is not None and a.exact),
                         unanchored=tuple(n for n, a in enumerate(anchors, 1) if a is None))


def translation_gaps(translations: Mapping, languages: Iterable[str], option_count: int) -> list[str]:
    """The languages (of ``languages``) this item lacks or carries incompletely."""
    gaps = []
    for language in sorted(languages):
        entry = translations.get(language) if isinstance(translations, Mapping) else None
        if not isinstance(entry, Mapping) or not all(entry.get(f) for f in TRANSLATED_FIELDS):
            gaps.append(language)
        elif is_out_of_date(entry):  # the original changed since (annotation.translations)
            gaps.append(gettext("%(language)s (out of date: %(fields)s changed)", language=language,
                                fields=entry[OUT_OF_DATE]))
        elif not isinstance(entry["options"], list) or len(entry["options"]) != option_count:
            gaps.append(language)
    return gaps


@dataclass(frozen=True)
class ItemInput:
    item_id: int
    label: str  # e.g. "detectbench-v1.3#232"
    context: str
    options: tuple[str, ...]
    answer_index: int
    evidence: str
    translations: Mapping


@dataclass
class ItemFlags:
    item_id: int
    label: str
    flags: dict[str, str]  # kind -> what exactly
    anchoring: ClueAnchoring

    def as_dict(self) -> dict:
        return {"item": self.item_id, "label": self.label, "kinds": sorted(self.flags), "details": self.flags}


def check_item(item: ItemInput, *, languages: Iterable[str] = ()) -> ItemFlags:
    flags = option_flags(item.options, item.answer_index)
    anchoring = clue_anchoring(item.evidence, item.context)
    if anchoring.unanchored:
        flags["unanchored_clue"] = f"clue(s) {', '.join(map(str, anchoring.unanchored))} of {anchoring.clues}"
    gaps = translation_gaps(item.translations, languages, len(item.options))
    if gaps:
        flags["missing_translation"] = ", ".join(gaps)
    return ItemFlags(item_id=item.item_id, label=item.label, flags=flags, anchoring=anchoring)


def languages_of(translations: Iterable[Mapping]) -> set[str]:
    """Every language some item carries."""
    return {language for t in translations if isinstance(t, Mapping) for language in t}


@dataclass(frozen=True)
class AnswerSkew:
    """How often each position holds the correct answer, over the items with the most common option count."""

    option_count: int
    n: int
    counts: tuple[int, ...]
    chi2: float | None
    p_value: float | None
    first_share: float | None  # what always answering the first option scores

    def as_dict(self) -> dict:
        shares = [c / self.n if self.n else None for c in self.counts]
        return {**asdict(self), "counts": list(self.counts), "shares": shares,
                "expected_share": 1 / self.option_count if self.option_count else None}


def answer_skew(items: Sequence[tuple[int, int]]) -> AnswerSkew:
    """``items`` are (option count, answer index)."""
    from scipy import stats  # here, not at the top: the forms import this module at URL loading

    if not items:
        return AnswerSkew(option_count=0, n=0, counts=(), chi2=None, p_value=None, first_share=None)
    count = Counter(n for n, _ in items).most_common(1)[0][0]
    answers = [a for n, a in items if n == count]
    counts = tuple(sum(1 for a in answers if a == position) for position in range(count))
    test = stats.chisquare(counts) if len(answers) else None
    return AnswerSkew(option_count=count, n=len(answers), counts=counts,
                      chi2=float(test.statistic) if test is not None else None,
                      p_value=float(test.pvalue) if test is not None else None,
                      first_share=counts[0] / len(answers) if answers else None)


@dataclass
class QualitySummary:
    n_items: int
    counts: dict[str, int]
    flagged: list[ItemFlags]
    languages: list[str]
    clues: dict[str, int] = field(default_factory=dict)
    skew: AnswerSkew | None = None


def summarize(results: Sequence[ItemFlags], *, languages: Iterable[str], skew: AnswerSkew) -> QualitySummary:
    counts = {kind: sum(1 for r in results if kind in r.flags) for kind in FLAG_KINDS}
    clues = {
        "clues": sum(r.anchoring.clues for r in results),
        "exact": sum(r.anchoring.exact for r in results),
        "fuzzy": sum(r.anchoring.fuzzy for r in results),
        "unanchored": sum(len(r.anchoring.unanchored) for r in results),
    }
    return QualitySummary(n_items=len(results), counts=counts, flagged=[r for r in results if r.flags],
                          languages=sorted(languages), clues=clues, skew=skew)
