"""Reads for the analysis pages and commands: the circular accuracy of a run, and the inputs of the
figures (evaluation.figures.data turns them into the plotted numbers, evaluation.figures.drawing draws them)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.translation import gettext

from annotation.item_facts import QUESTION_TYPES
from annotation.models import Item
from annotation.text import token_count, word_count
from evaluation.errors import EmptyFigure, EmptySelection
from evaluation.figures.data import (
    FIGURES,
    Grouped,
    ItemFacts,
    RunRows,
    Scatter,
    Selection,
    accuracy_by_feature,
    accuracy_by_question_type,
    human_vs_model,
    keyinfo_accuracy,
    per_item,
)
from evaluation.model_calls.launch_estimate import LaunchEstimate, estimate
from evaluation.models import ModelEndpoint, OptionOrder, Result, Run, RunStatus
from evaluation.prompting.circular import CircularAccuracy, circular_accuracy
from evaluation.prompting.methods import METHODS, get_method
from evaluation.selectors.leaderboard import without_rejected
from evaluation.selectors.quality import check_kinds, flagged_item_ids
from evaluation.selectors.runs import select_item_ids
from foundation.errors import Invalid, NotFound
from studies.selectors.answers import response_outcomes


def run_circular_accuracy(*, run: Run) -> CircularAccuracy | None:
    """Circular and plain accuracy of a circular run (None for other option orders), one query."""
    if run.option_order != OptionOrder.CIRCULAR:
        return None
    rows = Result.objects.filter(run=run).values_list("item_id", "sample_index", "is_correct", "error")
    return circular_accuracy(((item, index, None if error else correct) for item, index, correct, error in rows),
                             rotations=run.rotations)


# --------------------------------------------------------------------------- the figures' inputs

def figure_run_choices(*, split: str, option_order: str = "") -> list[Run]:
    """Every finished multiple-choice run of this split a figure may show (newest first), for the run picker."""
    runs = (Run.objects.select_related("endpoint").defer("item_ids", "requested_ids")
            .filter(status=RunStatus.FINISHED, split=split)
            .exclude(method__in=[name for name, m in METHODS.items() if m.free_text]))
    if option_order:
        runs = runs.filter(option_order=option_order)
    return list(runs.order_by("-created_at"))


def figure_runs(*, split: str, option_order: str = OptionOrder.ORIGINAL, run_ids: Sequence[int] = ()) -> list[Run]:
    """The runs a figure shows: the runs chosen (``run_ids``), or else finished multiple-choice runs on exactly
    this split (with this option order, any when empty), the latest per (method, endpoint, option order), in
    the registry's method order."""
    runs = (Run.objects.select_related("endpoint").defer("item_ids", "requested_ids")
            .filter(status=RunStatus.FINISHED, split=split)
            .exclude(method__in=[name for name, m in METHODS.items() if m.free_text]))
    if run_ids:
        chosen = runs.filter(pk__in=list(run_ids))
        missing = sorted(set(run_ids) - set(chosen.values_list("pk", flat=True)))
        if missing:
            raise Invalid(gettext("Not finished multiple-choice runs of split %(split)s: %(runs)s")
                          % {"split": split, "runs": ", ".join(f"#{pk}" for pk in missing)}, field="runs")
        order = {name: i for i, name in enumerate(METHODS)}
        return sorted(chosen, key=lambda r: (order.get(r.method, len(order)), r.endpoint.name, r.pk))
    if option_order:
        runs = runs.filter(option_order=option_order)
    latest: dict[tuple[str, int, str], Run] = {}
    for run in runs.order_by("created_at"):
        latest[(run.method, run.endpoint_id, run.option_order)] = run
    order = {name: i for i, name in enumerate(METHODS)}
    return sorted(latest.values(), key=lambda r: (order.get(r.method, len(order)), r.endpoint.name, r.option_order))


def run_label(run: Run, *, with_order: bool = False) -> str:
    method = METHODS[run.method].label if run.method in METHODS else run.method
    return f"{method} · {run.endpoint.name}" + (f" · {run.option_order}" if with_order else "")


@dataclass
class FigureInputs:
    selection: Selection
    runs: list[RunRows]
    facts: dict[int, ItemFacts]


def figure_inputs(*, split: str, option_order: str = OptionOrder.ORIGINAL, exclude: Sequence[str] = (),
                  run_ids: Sequence[int] = ()) -> FigureInputs:
    """The chosen runs' scored rows over the items every one of them answered (like for like), without
    stale rows (an item changed since), without rejected (deleted) items as the leaderboard leaves them out
    and, when asked, without flagged items; the Selection says what was dropped."""
    if not split:
        raise Invalid(gettext("Choose a split: a figure never mixes item sets."), field="split")
    kinds = check_kinds(exclude) if exclude else ()
    runs = figure_runs(split=split, option_order=option_order, run_ids=run_ids)
    selection = Selection(split=split, runs=len(runs), excluded_kinds=kinds)
    rows: dict[int, list[tuple[int, bool, float | None]]] = defaultdict(list)
    stale = 0
    for run_id, item_id, correct, keyinfo, version, current in (
        Result.objects.filter(run__in=runs, error="", is_correct__isnull=False)
        .values_list("run_id", "item_id", "is_correct", "keyinfo", "item_version", "item__content_version")
        .iterator(chunk_size=5000)
    ):
        if version != current:
            stale += 1
            continue
        rows[run_id].append((item_id, correct, keyinfo))
    item_sets = [{item_id for item_id, _, _ in rows[run.pk]} for run in runs]
    common = set.intersection(*item_sets) if item_sets else set()
    selection.dropped_not_common = len(set().union(*item_sets) - common) if item_sets else 0
    if kinds:
        flagged = flagged_item_ids(split=split, kinds=kinds) & common
        selection.dropped_flagged = len(flagged)
        common -= flagged
    remaining, rejected = without_rejected(split, sorted(common))  # the leaderboard's rule, and its count
    common = set(remaining)
    selection.items = len(common)
    selection.stale_rows = stale
    if stale:
        selection.notes.append(gettext("%(n)s stale row(s) dropped (item changed since)") % {"n": stale})
    if rejected:
        selection.notes.append(gettext("%(n)s deleted item(s) left out") % {"n": rejected})
    with_order = not option_order
    kept = []
    for run in runs:
        mine = [(i, c, k) for i, c, k in rows[run.pk] if i in common]
        keyinfos = [k for _, _, k in mine if k is not None]
        kept.append(RunRows(run_id=run.pk, label=run_label(run, with_order=with_order),
                            rows=tuple((i, c) for i, c, _ in mine),
                            keyinfo=sum(keyinfos) / len(keyinfos) if keyinfos else None))
    facts = {
        pk: ItemFacts(item_id=pk, context_words=words, option_words=sum(map(word_count, options)) / len(options),
                      clues=clues, steps=steps, question_type=qtype)
        for pk, words, options, clues, steps, qtype in Item.objects.filter(pk__in=common).values_list(
            "pk", "context_words", "options", "evidence_count", "reasoning_steps", "question_type")
    }
    return FigureInputs(selection=selection, runs=kept, facts=facts)


def figure_data(name: str, *, split: str, option_order: str = OptionOrder.ORIGINAL,
                exclude: Sequence[str] = (), run_ids: Sequence[int] = ()) -> Scatter | Grouped:
    """The numbers of one figure (evaluation.figures.data.FIGURES) over the chosen split and runs.

    Refused with EmptyFigure (saying why and what to do) when the figure would have nothing on it."""
    if name not in FIGURES:
        raise NotFound(gettext("No figure %(name)r; choose from %(figures)s.") % {"name": name, "figures": ", ".join(FIGURES)})
    inputs = figure_inputs(split=split, option_order=option_order, exclude=exclude, run_ids=run_ids)
    why = empty_figure_reason(inputs.selection, option_order=option_order)
    if why:
        raise EmptyFigure(why)
    note = inputs.selection.text()
    if name == "keyinfo-accuracy":
        return keyinfo_accuracy(inputs.runs, note=note)
    if name == "accuracy-by-question-type":
        return accuracy_by_question_type(inputs.runs, inputs.facts, order=QUESTION_TYPES, note=note)
    if name == "human-vs-model":
        # Answers to the item's current version only (the model rows kept are fresh too); a question whose own time
        # limit ran out counts as not correct, as in the study's Table 3.
        human = {i: (a.correct, a.counted) for i, a in response_outcomes(item_ids=list(inputs.facts)).items()}
        label = gettext("%(n)s run(s)") % {"n": len(inputs.runs)}
        answers = gettext("%(n)s participant answer(s)") % {"n": sum(n for _, n in human.values())}
        return human_vs_model(human, per_item(inputs.runs), model_label=label, note=f"{note}; {answers}")
    return accuracy_by_feature(name, inputs.runs, inputs.facts, note=note)


def empty_figure_reason(selection: Selection, *, option_order: str = "") -> str:
    """Why a figure over this selection would be empty, and what to do (empty when it has something to show)."""
    if not selection.runs:
        order = f" with option order {option_order}" if option_order else ""
        return (f"No finished multiple-choice run on split {selection.split}{order}: launch one (Runs, or "
                f"`evaluate --split {selection.split}`), or choose another option order.")
    if not selection.items:
        parts = [f"The {selection.runs} chosen run(s) of split {selection.split} have no item in common"]
        if selection.stale_rows:
            parts.append(f"{selection.stale_rows} row(s) are stale (their item's content changed since the run)")
        if selection.dropped_not_common:
            parts.append(f"{selection.dropped_not_common} item(s) are not in every run")
        if selection.dropped_flagged:
            parts.append(f"{selection.dropped_flagged} common item(s) are flagged and excluded")
        return ("; ".join(parts) + ". Choose fewer runs or runs over the same items, run the models again on the "
                "changed items, or include the flagged items.")
    return ""


# --------------------------------------------------------------------------- before a launch




def launch_estimate(*, endpoint: ModelEndpoint, methods: Sequence[str], split: str = "", item_status: str = "",
                    question_type: str = "", ids: Sequence[int] = (), limit: int | None = None, samples: int = 1,
                    k: int | None = None, option_order: str = OptionOrder.ORIGINAL) -> LaunchEstimate:
    """The requests (and approximate cost) of launching these methods over this selection."""
    item_ids = select_item_ids(split=split, item_status=item_status, question_type=question_type, ids=ids,
                               limit=limit)
    if not item_ids:
        raise EmptySelection(gettext("No items match this selection."))
    rows = list(Item.objects.filter(pk__in=item_ids).values_list("context_tokens", "question", "options"))
    item_tokens = sum(context + token_count(question) + sum(map(token_count, options))
                      for context, question, options in rows)
    rotations = max((len(o) for _, _, o in rows), default=1) if option_order == OptionOrder.CIRCULAR else 1
    return estimate(methods=[get_method(m) for m in methods], k=k, items=len(rows), item_tokens=item_tokens,
                    samples=samples, rotations=rotations, max_tokens=endpoint.max_tokens,
                    price_in_per_mtok=endpoint.price_in_per_mtok, price_out_per_mtok=endpoint.price_out_per_mtok,
                    builtin=endpoint.is_builtin)
