"""Reads that check a study's setup before participants meet it: translation coverage of the pool and the
practice item in every language the study offers, and warnings about the sample, the quota and the screening."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from annotation.models import Item, ItemStatus
from studies.allocation import quota_fit
from studies.content import is_translated
from studies.models import STUDY_LANGUAGES, Study, StudyItem


def pool_candidates(*, split: str, include_rejected: bool = False):
    """The items of a split a pool is drawn from: those annotators rejected only when asked for."""
    items = Item.objects.filter(split=split)
    return items if include_rejected else items.exclude(status=ItemStatus.REJECTED)


@dataclass
class Coverage:
    """How much of a study is translated into one of its languages."""

    language: str
    name: str
    items: int
    translated: int
    missing: list[Item] = field(default_factory=list)   # pool items without a complete translation
    practice_missing: bool = False                      # the practice item has none

    @property
    def complete(self) -> bool:
        return not self.missing and not self.practice_missing

    @property
    def share(self) -> float:
        return self.translated / self.items if self.items else 1.0


def translation_coverage(study: Study) -> list[Coverage]:
    """Per language of the study other than the original: translated pool items, the missing ones, the practice
    item. One query for the pool (only the fields the check reads) and one for the practice item."""
    languages = study.translated_languages
    if not languages:
        return []
    pool = [row.item for row in StudyItem.objects.filter(study=study).select_related("item").order_by("position")
            .only("id", "item__id", "item__source", "item__external_id", "item__split", "item__options",
                  "item__translations")]
    practice = None
    if study.practice_item_id:
        practice = Item.objects.only("id", "options", "translations").get(pk=study.practice_item_id)
    names = dict(STUDY_LANGUAGES)
    coverage = []
    for language in languages:
        missing = [item for item in pool if not is_translated(item.translations, language, len(item.options))]
        coverage.append(Coverage(
            language=language, name=str(names.get(language, language)), items=len(pool),
            translated=len(pool) - len(missing), missing=missing,
            practice_missing=practice is not None and not is_translated(practice.translations, language,
                                                                        len(practice.options)),
        ))
    return coverage


def untranslated_item_ids(study: Study, item_ids: list[int]) -> list[int]:
    """Those of `item_ids` that lack a complete translation into one of the study's languages."""
    languages = study.translated_languages
    if not languages:
        return []
    items = Item.objects.filter(pk__in=item_ids).only("id", "options", "translations")
    return [item.pk for item in items
            if not all(is_translated(item.translations, language, len(item.options)) for language in languages)]


def setup_warnings(study: Study, *, available: int | None = None) -> list[str]:
    """What a researcher should know before opening: a sample larger than the split, a quota that does not divide.

    `available`: how many items the split offers (counted here when None).
    """
    warnings = []
    n_items = study.pool.count()
    if study.pool_sample and study.pool_split:
        if available is None:
            available = pool_candidates(split=study.pool_split, include_rejected=study.pool_include_rejected).count()
        if available < study.pool_sample:
            warnings.append(_(
                "The sample asks for %(sample)d items but the split “%(split)s” has only %(available)d usable "
                "items, so the pool has %(available)d."
            ) % {"sample": study.pool_sample, "split": study.pool_split, "available": available})
    fit = quota_fit(n_items, study.raters, study.per_participant)
    if n_items and n_items < study.per_participant:
        warnings.append(_(
            "Each participant needs %(per)d distinct items but the pool has only %(n)d: nobody can take part."
        ) % {"per": study.per_participant, "n": n_items})
    elif n_items and not fit.divides:
        message = _(
            "%(n)d items × %(raters)d raters = %(total)d answers do not divide into %(per)d per participant: "
            "%(complete)d participants can finish, and %(stranded)d answers will never be collected."
        ) % {"n": n_items, "raters": study.raters, "total": n_items * study.raters, "per": study.per_participant,
             "complete": fit.complete_attempts, "stranded": fit.stranded_answers}
        hints = []
        if fit.item_counts:
            hints.append(_("a pool of %(sizes)s items") % {"sizes": _(" or ").join(map(str, fit.item_counts))})
        if fit.per_participant_counts:
            hints.append(_("%(counts)s questions per participant") % {
                "counts": _(" or ").join(map(str, fit.per_participant_counts))})
        if hints:
            message += " " + _("Dividing settings: %(hints)s.") % {"hints": _("; or ").join(hints)}
        warnings.append(message)
    return warnings + screening_warnings(study)


def screening_warnings(study: Study) -> list[str]:
    """A screening question that nobody can pass, or screen-outs with no code to return with."""
    if not study.screening:
        return []
    warnings = []
    if not study.screening_pass:
        warnings.append(_("The screening question has no passing option: every participant will be screened out."))
    if not study.screen_out_code:
        warnings.append(_("The study screens participants out but has no screen-out code: a screened-out "
                          "participant is asked to return the study instead, and gets no screen-out payment."))
    return warnings
