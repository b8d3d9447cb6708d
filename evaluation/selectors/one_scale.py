"""One scale for people and models (issue 21, point 3): every answer on a split's items, by people and by models,
fitted with one item-response model (evaluation.statistics.irt says which and how).

- a **respondent** is a study attempt (one participant's session) or a model run: the latest finished
  multiple-choice run of each endpoint x method x option order on the split (as the figures choose them);
- an **item** is an item at one content version (answers to an edited text are answers to another item);
- a run's answer to an item is its first sample (with circular order: right only if every rotation of the first
  sample is), as the leaderboard counts it; a participant's is the accepted response;
- rejected (deleted) items are left out, by the leaderboard's rule, and the notes say how many.

The fit is cached under a digest of every answer it used, so it is recomputed only when an answer changes.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from django.core.cache import cache
from django.db.models import F
from django.utils.translation import gettext

from annotation.models import Item
from evaluation.errors import EmptyFigure
from evaluation.models import Result
from evaluation.selectors.analysis import figure_runs, run_label
from evaluation.selectors.leaderboard import without_rejected
from evaluation.statistics.irt import Z95, choose_model, fit, group_difficulties
from studies.selectors.answers import response_rows

PEOPLE, MODELS = "person", "model"
#: How many items each list of "hard for one group, easy for the other" shows.
CONTRAST_TOP = 10


@dataclass(frozen=True)
class Respondent:
    key: str  # "run:12" or "attempt:34"
    kind: str  # PEOPLE or MODELS
    label: str
    answers: int
    correct: int
    ability: float
    se: float

    @property
    def low(self) -> float:
        return self.ability - Z95 * self.se

    @property
    def high(self) -> float:
        return self.ability + Z95 * self.se

    @property
    def accuracy(self) -> float:
        return self.correct / self.answers if self.answers else 0.0

    def as_json(self) -> dict:
        return asdict(self) | {"ci95": [self.low, self.high], "accuracy": self.accuracy}


@dataclass(frozen=True)
class ItemScale:
    item: int
    external_id: str
    version: int
    current: bool  # the item's current content version
    difficulty: float
    difficulty_se: float
    discrimination: float
    discrimination_se: float | None
    people_answers: int
    people_correct: int
    model_answers: int
    model_correct: int
    people_difficulty: float | None  # the item's difficulty for people only (abilities held)
    model_difficulty: float | None
    contrast_z: float | None  # (people - models difficulty) / its SE: > 0 harder for people

    @property
    def people_accuracy(self) -> float | None:
        return self.people_correct / self.people_answers if self.people_answers else None

    @property
    def model_accuracy(self) -> float | None:
        return self.model_correct / self.model_answers if self.model_answers else None

    def as_json(self) -> dict:
        return asdict(self) | {"people_accuracy": self.people_accuracy, "model_accuracy": self.model_accuracy}


@dataclass
class OneScale:
    split: str
    model: str
    reason: str
    answers: int
    converged: bool
    respondents: list[Respondent]
    items: list[ItemScale]
    notes: list[str] = field(default_factory=list)

    @property
    def people(self) -> list[Respondent]:
        return [r for r in self.respondents if r.kind == PEOPLE]

    @property
    def models(self) -> list[Respondent]:
        return [r for r in self.respondents if r.kind == MODELS]

    @property
    def hard_for_people(self) -> list[ItemScale]:
        """Items much harder for people than for models (largest contrast first)."""
        found = [i for i in self.items if i.contrast_z is not None and i.contrast_z > 0]
        return sorted(found, key=lambda i: -i.contrast_z)[:CONTRAST_TOP]

    @property
    def hard_for_models(self) -> list[ItemScale]:
        found = [i for i in self.items if i.contrast_z is not None and i.contrast_z < 0]
        return sorted(found, key=lambda i: i.contrast_z)[:CONTRAST_TOP]

    def as_json(self) -> dict:
        return {"split": self.split, "model": self.model, "reason": self.reason, "answers": self.answers,
                "converged": self.converged, "notes": self.notes,
                "respondents": [r.as_json() for r in self.respondents],
                "items": [i.as_json() for i in self.items],
                "hard_for_people": [i.item for i in self.hard_for_people],
                "hard_for_models": [i.item for i in self.hard_for_models]}


def _model_answers(split: str) -> tuple[dict[str, str], list[tuple[str, tuple[int, int], bool]]]:
    runs = figure_runs(split=split, option_order="")
    labels = {f"run:{r.pk}": run_label(r, with_order=True) for r in runs}
    outcomes: dict[tuple[int, int, int], list[bool]] = defaultdict(list)
    rotations = {r.pk: r.rotations for r in runs}
    rows = (Result.objects.filter(run__in=runs, error="", is_correct__isnull=False, sample_index__lt=F("run__rotations"))
            .order_by().values_list("run_id", "item_id", "item_version", "is_correct").iterator(chunk_size=5000))
    for run_id, item_id, version, correct in rows:
        outcomes[(run_id, item_id, version)].append(bool(correct))
    answers = [(f"run:{run_id}", (item_id, version), all(oks))
               for (run_id, item_id, version), oks in outcomes.items() if len(oks) == rotations[run_id]]
    return labels, answers


def _people_answers(split: str) -> tuple[dict[str, str], list[tuple[str, tuple[int, int], bool]]]:
    rows = response_rows(item_ids=Item.objects.filter(split=split).values("pk"))
    labels = {f"attempt:{a}": gettext("%(study)s · attempt %(n)s") % {"study": slug, "n": a} for a, slug, _, _, _ in rows}
    return labels, [(f"attempt:{a}", (item, version), bool(ok)) for a, _, item, version, ok in rows]


def one_scale(*, split: str, model: str = "auto") -> OneScale:
    """Fit people and models on the split's items; EmptyFigure when there is too little to fit."""
    model_labels, model_rows = _model_answers(split)
    people_labels, people_rows = _people_answers(split)
    rows, rejected = _without_rejected_items(split, model_rows + people_rows)
    keys = list(model_labels) + list(people_labels)
    answered = {key for key, _, _ in rows}
    keys = [k for k in keys if k in answered]
    items = sorted({item for _, item, _ in rows})
    if len(keys) < 2 or len(items) < 2:
        raise EmptyFigure(gettext("Too little to fit on split %(split)s: %(respondents)s respondent(s) with answers "
                                  "and %(items)s item(s). Finish model runs on it or collect study answers.")
                          % {"split": repr(split), "respondents": len(keys), "items": len(items)})
    respondent_index = {k: i for i, k in enumerate(keys)}
    item_index = {k: i for i, k in enumerate(items)}
    r = [respondent_index[k] for k, _, _ in rows]
    j = [item_index[item] for _, item, _ in rows]
    y = [ok for _, _, ok in rows]
    is_person = [k.startswith("attempt:") for k in keys]
    digest = hashlib.sha1(repr((model, keys, items, r, j, y)).encode()).hexdigest()
    cached = cache.get(f"evaluation:one-scale:{digest}")
    if cached is None:
        fitted = fit(r, j, y, n_respondents=len(keys), n_items=len(items), model=model)
        cached = (fitted, *group_difficulties(fitted, r, j, y, is_person))
        cache.set(f"evaluation:one-scale:{digest}", cached, 24 * 3600)
    fitted, people_b, model_b = cached
    result = _assemble(split, fitted, people_b, model_b, keys, items, r, j, y, {**model_labels, **people_labels}, model)
    if rejected:
        result.notes.append(gettext("%(n)s deleted item(s) left out") % {"n": rejected})
    return result


def _without_rejected_items(split: str, rows: list) -> tuple[list, int]:
    """The answers without those to rejected (deleted) items, by the leaderboard's rule, and how many of the answered
    items went."""
    kept, rejected = without_rejected(split, sorted({item for _, (item, _), _ in rows}))
    if not rejected:
        return rows, 0
    keep = set(kept)
    return [row for row in rows if row[1][0] in keep], rejected


def _assemble(split, fitted, people_b, model_b, keys, items, r, j, y, labels, model="auto") -> OneScale:
    answers, correct = [0] * len(keys), [0] * len(keys)
    for i, ok in zip(r, y):
        answers[i] += 1
        correct[i] += ok
    respondents = [Respondent(key=k, kind=PEOPLE if k.startswith("attempt:") else MODELS, label=labels[k],
                              answers=answers[i], correct=correct[i], ability=fitted.ability[i],
                              se=fitted.ability_se[i]) for i, k in enumerate(keys)]
    facts = dict(Item.objects.filter(pk__in={item for item, _ in items}).values_list("pk", "external_id"))
    current = dict(Item.objects.filter(pk__in={item for item, _ in items}).values_list("pk", "content_version"))
    rows = []
    for k, (item, version) in enumerate(items):
        p, m = people_b[k], model_b[k]
        contrast = None
        if p.difficulty is not None and m.difficulty is not None:
            contrast = (p.difficulty - m.difficulty) / (p.se ** 2 + m.se ** 2) ** 0.5
        rows.append(ItemScale(item=item, external_id=facts.get(item, ""), version=version,
                              current=current.get(item) == version, difficulty=fitted.difficulty[k],
                              difficulty_se=fitted.difficulty_se[k], discrimination=fitted.discrimination[k],
                              discrimination_se=fitted.discrimination_se[k], people_answers=p.answers,
                              people_correct=p.correct, model_answers=m.answers, model_correct=m.correct,
                              people_difficulty=p.difficulty, model_difficulty=m.difficulty, contrast_z=contrast))
    respondents.sort(key=lambda x: (x.kind != MODELS, -x.ability))
    # The fit may come from the cache, made for a reader of another language: its reason is said again in this one.
    reason = choose_model(fitted.item_answers, model)[1]
    result = OneScale(split=split, model=fitted.model, reason=reason, answers=fitted.answers,
                      converged=fitted.converged, respondents=respondents, items=rows)
    result.notes = [
        gettext("%(model)s item-response model (%(reason)s), fitted by marginal maximum likelihood with abilities "
                "~ N(0, 1) and weak priors on the item parameters: abilities and difficulties on one scale.")
        % {"model": fitted.model, "reason": reason},
        gettext("Respondents: each study attempt, and each model run (the latest finished run of each endpoint x "
                "method x option order on the split). An item at another content version is another item."),
        gettext("Ability: posterior mean, 95%% interval +-1.96 posterior SD. Hard for people / for models: the "
                "item's difficulty fitted to each group's answers alone (abilities held), their difference over its "
                "standard error (z).") % {},
    ]
    return result
