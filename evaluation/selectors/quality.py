"""The data-quality report of a split, and the flagged items analyses can exclude.

The checks are evaluation.statistics.quality_checks (pure). Anchoring every clue of a split takes a second
or two, so the report is cached under a fingerprint of the split's items (count, last change,
sum of versions): any import or edit computes it afresh.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.core.cache import cache
from django.db.models import Count, Max, Sum
from django.utils.translation import gettext

from annotation.models import Item
from evaluation.statistics.quality_checks import FLAG_KINDS, ItemInput, answer_skew, check_item, languages_of, summarize
from foundation.errors import Invalid

CACHE_S = 24 * 3600
#: Bump when the checks change, so that no cached report of the old checks is shown.
CHECKS_VERSION = "2"


def quality_splits() -> list[str]:
    return list(Item.objects.order_by("split").values_list("split", flat=True).distinct())


def check_kinds(kinds: Iterable[str] | None) -> tuple[str, ...]:
    """The flag kinds asked for (all when None), refusing unknown ones."""
    if kinds is None:
        return tuple(FLAG_KINDS)
    kinds = tuple(dict.fromkeys(k for k in kinds if k))
    unknown = [k for k in kinds if k not in FLAG_KINDS]
    if unknown:
        raise Invalid(gettext("Unknown flag kind(s) %(kinds)s; choose from %(choices)s.")
                      % {"kinds": ", ".join(unknown), "choices": ", ".join(FLAG_KINDS)}, field="kinds")
    return kinds


def _fingerprint(split: str) -> str:
    facts = Item.objects.filter(split=split).aggregate(n=Count("pk"), changed=Max("updated_at"), versions=Sum("version"))
    changed = facts["changed"].isoformat() if facts["changed"] else "-"
    return f"{CHECKS_VERSION}:{facts['n']}:{changed}:{facts['versions'] or 0}"


def _compute(split: str) -> dict:
    rows = list(Item.objects.filter(split=split).order_by("pk").values_list(
        "pk", "source", "external_id", "context", "options", "answer_index", "evidence", "translations"))
    languages = languages_of(r[7] for r in rows)
    results = [
        check_item(ItemInput(item_id=pk, label=f"{source}#{external}", context=context, options=tuple(options),
                             answer_index=answer, evidence=evidence, translations=translations or {}),
                   languages=languages)
        for pk, source, external, context, options, answer, evidence, translations in rows
    ]
    summary = summarize(results, languages=languages, skew=answer_skew([(len(r[4]), r[5]) for r in rows]))
    return {
        "split": split,
        "n_items": summary.n_items,
        "kinds": [{"kind": kind, "description": text, "count": summary.counts[kind]} for kind, text in FLAG_KINDS.items()],
        "n_flagged": len(summary.flagged),
        "clues": summary.clues,
        "answer_positions": summary.skew.as_dict(),
        "languages": summary.languages,
        "flagged": [r.as_dict() for r in summary.flagged],
    }


def quality_report(*, split: str) -> dict:
    """The report as plain data (the page shows it, the JSON is it): counts per flag kind, every flagged
    item with what exactly, clue anchoring, answer positions."""
    if not split:
        raise Invalid(gettext("Choose a split."), field="split")
    key = f"evaluation:quality:{split}:{_fingerprint(split)}"
    report = cache.get(key)
    if report is None:
        report = _compute(split)
        cache.set(key, report, CACHE_S)
    return report


def flagged_item_ids(*, split: str, kinds: Iterable[str] | None = None) -> set[int]:
    """Ids of the split's items flagged with any of ``kinds`` (every kind when None): what an analysis
    excludes when asked to (and says how many it excluded)."""
    wanted = set(check_kinds(kinds))
    if not wanted:
        return set()
    return {entry["item"] for entry in quality_report(split=split)["flagged"] if wanted.intersection(entry["kinds"])}
