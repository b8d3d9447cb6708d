"""Study setup: create a study, change its settings, choose and freeze its item pool."""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from annotation.models import Item, ItemStatus
from foundation.numerals import is_number
from foundation.words import gettext
from studies.errors import (
    EmptyPool,
    PoolFrozen,
    PracticeItemInPool,
    RatersBelowLoad,
    RejectedItems,
    TranslationsMissing,
    UnknownItems,
)
from studies.models import ParticipantLease, Study, StudyItem, StudyStatus
from studies.setup_checks import pool_candidates, translation_coverage, untranslated_item_ids

#: The settings a seeded sample of the pool is drawn from: changing one of them draws it again.
POOL_FIELDS = ("pool_split", "pool_sample", "seed", "pool_include_rejected")


def sample_pool(*, split: str, sample: int | None, seed: int, include_rejected: bool = False) -> list[int]:
    """Item ids of a split, a seeded random sample of `sample` of them (all when None), in id order.

    Items annotators rejected are left out unless `include_rejected`.
    """
    ids = list(pool_candidates(split=split, include_rejected=include_rejected).order_by("id")
               .values_list("id", flat=True))
    if sample is not None and sample < len(ids):
        ids = sorted(random.Random(seed).sample(ids, sample))
    return ids


def pool_items_resolve(*, split: str, tokens: Sequence[str], include_rejected: bool = False) -> list[int]:
    """An explicit item list (external ids of the split, or database ids) as item ids.

    UnknownItems for names of no item; RejectedItems for items annotators rejected unless `include_rejected`.
    """
    tokens = [t for t in tokens if t]
    by_external = dict(Item.objects.filter(split=split, external_id__in=tokens).values_list("external_id", "id"))
    numbers = {int(t) for t in tokens if t not in by_external and _is_id(t)}
    existing = set(Item.objects.filter(pk__in=numbers).values_list("id", flat=True)) if numbers else set()
    ids, missing = [], []
    for token in tokens:
        if token in by_external:
            ids.append(by_external[token])
        elif _is_id(token) and int(token) in existing:
            ids.append(int(token))
        else:
            missing.append(token)
    if missing:
        raise UnknownItems(missing)
    if not include_rejected:
        rejected = Item.objects.filter(pk__in=ids, status=ItemStatus.REJECTED).order_by("id")
        if rejected.exists():
            raise RejectedItems([str(item) for item in rejected.only("id", "source", "external_id")])
    return ids


def _is_id(token: str) -> bool:
    return is_number(token, most_digits=18)


def _pool_of(study: Study, pool_items: Sequence[str] | None) -> list[int]:
    """The explicit list when given, else the seeded sample of the split; EmptyPool when there is nothing."""
    if pool_items:
        return pool_items_resolve(split=study.pool_split, tokens=pool_items,
                                  include_rejected=study.pool_include_rejected)
    ids = sample_pool(split=study.pool_split, sample=study.pool_sample, seed=study.seed,
                      include_rejected=study.pool_include_rejected)
    if not ids:
        if study.pool_include_rejected or not Item.objects.filter(split=study.pool_split).exists():
            raise EmptyPool()
        raise EmptyPool(gettext("This split has no items to draw from (items annotators rejected are left out "
                                "unless included)."))
    return ids


def _translated_only(study: Study, item_ids: Sequence[int]) -> list[int]:
    """`item_ids` without the items that lack a translation into one of the study's languages."""
    untranslated = set(untranslated_item_ids(study, list(item_ids)))
    kept = [pk for pk in item_ids if pk not in untranslated]
    if not kept:
        raise EmptyPool(gettext("No item of the pool has a translation into the study's languages."), field="language")
    return kept


@transaction.atomic
def study_create(*, slug: str, title: str = "", item_ids: Sequence[int] | None = None,
                 pool_items: Sequence[str] | None = None, user=None, exclude_untranslated: bool = False,
                 **fields: Any) -> Study:
    """Create a study (draft unless `status` is given) with its item pool.

    The pool is `item_ids`, else the explicit `pool_items` (external or database ids of the split), else
    the seeded sample that `pool_split`, `pool_sample` and `seed` describe; with `exclude_untranslated`
    the items without a translation into the study's languages are left out. An open study needs every
    pool item and the practice item translated (TranslationsMissing).
    """
    study = Study(slug=slug, title=title or slug, created_by=user, **fields)
    study.full_clean(exclude=["created_by", "practice_item"])
    if item_ids is None:
        item_ids = _pool_of(study, pool_items)
    if exclude_untranslated:
        item_ids = _translated_only(study, item_ids)
    study.save()
    _pool_write(study, item_ids)
    _practice_check(study)
    _translations_check(study)
    return study


@transaction.atomic
def study_update(*, study_id: int, item_ids: Sequence[int] | None = None, pool_items: Sequence[str] | None = None,
                 exclude_untranslated: bool = False, **fields: Any) -> Study:
    """Change a study's settings; the pool may change only while no attempt has started.

    The pool changes to `item_ids`, or to the explicit `pool_items`, or is drawn again when a setting
    of its sample (`pool_split`, `pool_sample`, `seed`, `pool_include_rejected`) changes; with
    `exclude_untranslated` the items without a translation into the study's languages leave it.
    Raters may not go below an item's load; an open study needs its translations (TranslationsMissing).
    """
    study = Study.objects.select_for_update().get(pk=study_id)
    resample = any(name in fields and fields[name] != getattr(study, name) for name in POOL_FIELDS)
    for name, value in fields.items():
        setattr(study, name, value)
    study.full_clean(exclude=["created_by", "practice_item"])
    study.save()
    if item_ids is None and (pool_items or resample):
        item_ids = _pool_of(study, pool_items)
    if exclude_untranslated:
        item_ids = _translated_only(study, item_ids if item_ids is not None else _pool_ids(study))
    if item_ids is not None and list(item_ids) != _pool_ids(study):
        study_set_pool(study=study, item_ids=item_ids)
    if "raters" in fields:
        busiest = max(study.pool.values_list("load", flat=True), default=0)
        if study.raters < busiest:
            raise RatersBelowLoad(busiest)
        study.pool.update(quota=study.raters)
    _practice_check(study)
    _translations_check(study)
    return study


def study_exclude_untranslated(*, study_id: int) -> int:
    """Leave the pool items without a translation into the study's languages out of its pool; how many left."""
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study_id)
        before = study.pool.count()
        study_update(study_id=study_id, exclude_untranslated=True)
    return before - Study.objects.get(pk=study_id).pool.count()


def _pool_ids(study: Study) -> list[int]:
    return list(study.pool.order_by("position").values_list("item_id", flat=True))


def _practice_check(study: Study) -> None:
    """The practice question tells the participant whether they were right: it must never be a study item."""
    if study.practice_item_id and study.pool.filter(item_id=study.practice_item_id).exists():
        raise PracticeItemInPool()


def _translations_check(study: Study) -> None:
    """An open study shows every pool item and the practice item in each of its languages: none may lack one."""
    if study.status != StudyStatus.OPEN or not study.translated_languages:
        return
    gaps = [(c.name, [str(item) for item in c.missing], c.practice_missing)
            for c in translation_coverage(study) if not c.complete]
    if gaps:
        raise TranslationsMissing(gaps)


@transaction.atomic
def study_set_pool(*, study: Study, item_ids: Sequence[int]) -> None:
    """Replace the item pool (quota = the study's raters); refused once participants have started."""
    if ParticipantLease.objects.filter(attempt__study=study).exists():
        raise PoolFrozen()
    study.pool.all().delete()
    _pool_write(study, item_ids)


def _pool_write(study: Study, item_ids: Sequence[int]) -> None:
    unique = list(dict.fromkeys(item_ids))
    existing = set(Item.objects.filter(pk__in=unique).values_list("id", flat=True))
    if len(existing) != len(unique):
        raise UnknownItems([str(i) for i in unique if i not in existing])
    StudyItem.objects.bulk_create(
        StudyItem(study=study, item_id=item_id, position=i, quota=study.raters) for i, item_id in enumerate(unique)
    )
