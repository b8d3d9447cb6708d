"""The quality card of a judge configuration: how far its labels agree with people, how calibrated and how
spread its beliefs are, and two biases known to bite LLM judges (answer position and answer length), each with
its n.

* agreement and calibration: the trust figures of the configuration's review queue
  (`annotation.selectors.belief_trust`): accuracy, Cohen's kappa (per question for a screening queue) and the
  debiased ECE with their intervals, from every review weighted by one over its label's inclusion probability
  (and from the uniform sample alone beside it);
* spread: the scored labels' beliefs (quantiles, histogram, mean, the share at the extremes);
* position: per permutation, the probe runs' labels against the queue's label of the same target, aspect and
  item version: the label flip rate (Wilson interval) and the mean absolute change of the judge's probability of
  the positive label;
* length (free-text grading): Spearman's rho of the judge's probability of "correct" against the answer's length
  in characters, and the judge's agreement with people by length quartile where reviews exist (weighted).
"""
from __future__ import annotations

from django.db.models import F
from django.utils.translation import gettext

from annotation import ppi
from annotation.models import BeliefLabel, LabelStatus
from annotation.selectors.belief_trust import belief_trust
from annotation.selectors.versions import judged_now_first
from evaluation.judge import probe, quality, specs
from evaluation.models.judge import JudgeConfig, JudgeProbeLabel, JudgeRun

ESTIMATES = ("weighted", "uniform")


def _positive(task: str, aspect: str) -> str:
    """The label whose probability a belief is read as (verdict: correct, a criterion: yes, keep: keep)."""
    return specs.get_task(task).choices(aspect)[0]


def _latest(labels: list[BeliefLabel]) -> list[BeliefLabel]:
    """One label per (target, aspect): of its item's content now if judged, else the latest judged
    (`judged_now_first`), an error label only when it has no other (a result's label at a version it was not asked
    at is one: evaluation migration 0014). The labels carry ``version_now``, their item's content version."""
    latest: dict[tuple[str, str], BeliefLabel] = {}

    def rank(label: BeliefLabel) -> tuple[bool, bool, int]:
        return (label.status != LabelStatus.ERROR, *judged_now_first(label.item_version, label.version_now, label.pk))

    for label in labels:
        key = (label.target, label.aspect)
        if key not in latest or rank(label) > rank(latest[key]):
            latest[key] = label
    return list(latest.values())


def _agreement(trust: dict) -> dict:
    found = {}
    for kind in ESTIMATES:
        figures = trust[kind]
        found[kind] = {"n": figures["n"], "n_eff": figures["n_eff"], "n_reviews": figures["n_reviews"],
                       "reason": figures["reason"], "missing": figures.get("missing", ""),
                       "accuracy": figures["accuracy"], "kappa": figures["kappa"]}
    found["by_aspect"] = [{"aspect": a["aspect"], "n_reviews": a["n_reviews"],
                           **{kind: {"n": a[kind]["n"], "accuracy": a[kind]["accuracy"], "kappa": a[kind]["kappa"]}
                              for kind in ESTIMATES}} for a in trust["by_aspect"]]
    return found


def _calibration(trust: dict) -> dict:
    return {kind: {"ece": trust[kind]["ece"], "ece_plugin": trust[kind]["ece_plugin"], "brier": trust[kind]["brier"],
                   "n": trust[kind]["n"], "reason": trust[kind]["reason"]} for kind in ESTIMATES}


def _spread(labels: list[BeliefLabel]) -> dict:
    scored = [label for label in labels if label.status == LabelStatus.SCORED and label.belief is not None]
    aspects = sorted({label.aspect for label in scored})
    return {"all": quality.belief_spread([label.belief for label in scored]),
            "by_aspect": [{"aspect": aspect, **quality.belief_spread(
                [label.belief for label in scored if label.aspect == aspect])} for aspect in aspects]
            if len(aspects) > 1 else []}


def probe_pairs(config: JudgeConfig, kind: str) -> list[dict]:
    """Each probe label of the configuration under the permutation ``kind`` beside the queue's label of the same
    target, aspect and item version (the latest probe label where several probes asked the same)."""
    probed: dict[tuple[str, str, int], JudgeProbeLabel] = {}
    for label in (JudgeProbeLabel.objects.filter(judge_run__config=config, judge_run__probe=kind)
                  .order_by("created_at", "pk")):
        probed[(label.target, label.aspect, label.item_version)] = label
    if not probed:
        return []
    originals = {(o.target, o.aspect, o.item_version): o for o in BeliefLabel.objects.filter(
        queue_id=config.queue_id, target__in={key[0] for key in probed}).only(
        "target", "aspect", "item_version", "label", "belief", "status", "choices", "task")}
    pairs = []
    for key, permuted in probed.items():
        original = originals.get(key)
        if original is None:
            continue
        both_scored = original.status == LabelStatus.SCORED and permuted.status == LabelStatus.SCORED
        positive = _positive(original.task, original.aspect)
        pairs.append({
            "target": key[0], "aspect": key[1], "item_version": key[2], "option_order": permuted.option_order,
            "original_label": original.label, "original_belief": original.belief,
            "permuted_label": permuted.label, "permuted_belief": permuted.belief, "scored": both_scored,
            "original_share": ppi.prediction(original.label, original.belief, positive, original.choices),
            "permuted_share": ppi.prediction(permuted.label, permuted.belief, positive, original.choices),
        })
    return pairs


def _position(config: JudgeConfig) -> list[dict]:
    runs = list(JudgeRun.objects.filter(config=config).exclude(probe="").order_by("-created_at", "-id")
                .values("pk", "probe", "status", "n", "scored", "unscored", "errors", "note"))
    found = []
    for kind in probe.PERMUTATIONS:
        pairs = [p for p in probe_pairs(config, kind) if p["scored"]]
        flips = quality.position_flips([(p["original_label"], p["permuted_label"]) for p in pairs],
                                       [(p["original_share"], p["permuted_share"]) for p in pairs])
        aspects = sorted({p["aspect"] for p in pairs})
        by_aspect = [{"aspect": aspect, **quality.position_flips(
            [(p["original_label"], p["permuted_label"]) for p in pairs if p["aspect"] == aspect],
            [(p["original_share"], p["permuted_share"]) for p in pairs if p["aspect"] == aspect]).as_dict()}
            for aspect in aspects] if len(aspects) > 1 else []
        # Over several questions the headline pools them (a target counts once per question, so its interval is
        # too narrow where a target's questions flip together): read the per-question rows.
        found.append({"kind": kind, "runs": [r for r in runs if r["probe"] == kind], **flips.as_dict(),
                      "pooled_over": len(aspects),
                      "by_aspect": by_aspect})
    return found


def _answer_length(label: BeliefLabel) -> int | None:
    answer = (label.payload or {}).get("answer")
    return len(answer.strip()) if isinstance(answer, str) and answer.strip() else None


def _length(labels: list[BeliefLabel], rows: list[dict], weighted: dict) -> dict | None:
    """Free-text grading only: the judge's P(correct) against answer length, and its agreement with people by
    length (the weighted reviews; refused, with its reason, where the queue's weighted estimate is)."""
    verdicts = [label for label in labels if label.task == specs.FREE_TEXT and label.aspect == "verdict"]
    if not verdicts:
        return None
    points = [(length, ppi.prediction(label.label, label.belief, specs.CORRECT, label.choices))
              for label in verdicts if label.status == LabelStatus.SCORED
              and (length := _answer_length(label)) is not None]
    points = [(length, share) for length, share in points if share is not None]
    rho = quality.spearman([p[0] for p in points], [p[1] for p in points])
    lengths = {label.pk: _answer_length(label) for label in verdicts}
    reviewed = [r for r in rows if r["aspect"] == "verdict" and r["weight"] > 0 and lengths.get(r["label_id"])]
    bins = quality.length_bins([lengths[r["label_id"]] for r in reviewed], [r["agrees"] for r in reviewed],
                               [r["weight"] for r in reviewed], groups=[r["label_id"] for r in reviewed])
    if not weighted["defined"]:  # no unbiased weighted estimate at all: none per length either
        for b in bins:
            b["accuracy"] = {**b["accuracy"], "value": None, "low": None, "high": None, "reason": weighted["reason"]}
    return {"spearman": rho.as_dict(), "what": gettext("the judge's probability of “correct” against the answer's "
                                                       "length in characters"),
            "bins": bins, "n_reviewed": len({r["label_id"] for r in reviewed})}


def judge_quality_card(*, config: JudgeConfig) -> dict:
    """Every figure of the configuration's quality card, each with its n (plain data: the page, the API and the
    CSV read it)."""
    trust = belief_trust(queue=config.queue)
    labels = _latest(list(BeliefLabel.objects.filter(queue_id=config.queue_id).only(
        "id", "target", "aspect", "item_version", "task", "label", "belief", "status", "choices", "payload")
        .annotate(version_now=F("item__content_version"))))
    return {
        "config": config.name, "task": config.task, "belief_source": config.belief_source,
        "n_labels": len(labels), "n_scored": sum(label.status == LabelStatus.SCORED for label in labels),
        "n_reviews": trust["n_reviews"],
        "agreement": _agreement(trust), "calibration": _calibration(trust), "spread": _spread(labels),
        "position": _position(config), "length": _length(labels, trust["rows"], trust["weighted"]),
    }


def probe_choices(*, config: JudgeConfig, pk: int | None = None) -> list[JudgeRun]:
    """The configuration's judge runs a position probe may permute (not probes, tasks that show options), newest
    first (``pk``: that one only)."""
    runs = JudgeRun.objects.filter(config=config, probe="", task__in=probe.PROBED_TASKS).select_related(
        "config__endpoint", "target_run__endpoint").defer("target_run__item_ids", "target_run__requested_ids")
    if pk is not None:
        runs = runs.filter(pk=pk)
    return list(runs.order_by("-created_at", "-id")[:50])


CSV_COLUMNS = ("section", "estimate", "aspect", "figure", "value", "low", "high", "n", "note")


def _row(section: str, figure: str, value, low=None, high=None, n=None, *, estimate: str = "", aspect: str = "",
         note: str = "") -> dict:
    return {"section": section, "estimate": estimate, "aspect": aspect, "figure": figure, "value": value,
            "low": low, "high": high, "n": n, "note": note}


def _estimate_row(section: str, figure: str, e: dict | None, **kw) -> dict:
    e = e or {}
    return _row(section, figure, e.get("value"), e.get("low"), e.get("high"), e.get("n"), note=e.get("reason", ""),
                **kw)


def card_rows(card: dict) -> list[dict]:
    """The card as one row per figure (the CSV export): section, estimate, aspect, figure, value, interval, n."""
    rows = []
    agreement, calibration = card["agreement"], card["calibration"]
    for kind in ESTIMATES:
        rows.append(_estimate_row("agreement", "accuracy", agreement[kind]["accuracy"], estimate=kind))
        rows.append(_estimate_row("agreement", "kappa", agreement[kind]["kappa"], estimate=kind))
        for a in agreement["by_aspect"]:
            rows.append(_estimate_row("agreement", "accuracy", a[kind]["accuracy"], estimate=kind, aspect=a["aspect"]))
            rows.append(_estimate_row("agreement", "kappa", a[kind]["kappa"], estimate=kind, aspect=a["aspect"]))
        rows.append(_estimate_row("calibration", "ece_debiased", calibration[kind]["ece"], estimate=kind))
        rows.append(_row("calibration", "brier", calibration[kind]["brier"], n=calibration[kind]["n"], estimate=kind))
    for spread in [card["spread"]["all"], *card["spread"]["by_aspect"]]:
        aspect = spread.get("aspect", "")
        rows.append(_row("spread", "mean_belief", spread["mean"], n=spread["n"], aspect=aspect))
        rows += [_row("spread", f"quantile_{q}", v, n=spread["n"], aspect=aspect) for q, v in spread["quantiles"].items()]
        rows.append(_row("spread", "extreme_share", spread["extreme_share"], n=spread["n"], aspect=aspect,
                         note=f"belief <= {quality.EXTREME} or >= {1 - quality.EXTREME}"))
        rows += [_row("spread", f"histogram_{b['lower']:.1f}_{b['upper']:.1f}", b["share"], n=b["count"],
                      aspect=aspect) for b in spread["histogram"]]
    for p in card["position"]:
        for flips in [p, *p["by_aspect"]]:
            aspect = flips.get("aspect", "")
            rows.append(_row("position", "flip_rate", flips["rate"], flips["low"], flips["high"], flips["n"],
                             estimate=p["kind"], aspect=aspect, note=flips["reason"]))
            rows.append(_row("position", "mean_abs_belief_change", flips["mean_abs_change"], n=flips["n_belief"],
                             estimate=p["kind"], aspect=aspect))
    length = card["length"]
    if length is not None:
        s = length["spearman"]
        rows.append(_row("length", "spearman_rho", s["rho"], s["low"], s["high"], s["n"], note=s["reason"]))
        rows.append(_row("length", "spearman_p_value", s["p_value"], n=s["n"]))
        for b in length["bins"]:
            rows.append(_estimate_row("length", f"accuracy_length_{b['from']}_{b['to']}", b["accuracy"],
                                      estimate="weighted"))
    return rows
