"""A refresh's rows: a run's stale rows move, whole, to SupersededResult; an answer of the run kept there that was
asked at its item's current content (an edit undone after a refresh, a re-import of the content it had) comes back
as the run's row, with its id (its judge labels name it ``result:<id>``), instead of the item being asked again."""
from __future__ import annotations

from django.db.models import F

from annotation.models import ItemStatus
from evaluation.models import Result, Run, SupersededResult

#: The row's fields as stored in ``SupersededResult.row`` (their attribute names: ``run_id``, ``item_id``).
_FIELDS = {field.attname: field for field in Result._meta.concrete_fields}


def _result(row: dict) -> Result:
    """The row as it was, from its JSON copy (dates were written as text)."""
    return Result(**{name: _FIELDS[name].to_python(value) for name, value in row.items() if name in _FIELDS})


def supersede_stale_rows(run: Run, user=None) -> tuple[int, int]:
    """Move the run's stale rows (of items not deleted) to SupersededResult, then take back, for each (item, sample)
    of the run left without a row, its newest superseded answer asked at the item's current content and not failed.
    Returns (rows superseded, rows taken back). Called under the run's lock (services.runs.run_refresh)."""
    stale = (Result.objects.filter(run=run).exclude(item_version=F("item__content_version"))
             .exclude(item__status=ItemStatus.REJECTED).select_for_update(of=("self",)))
    rows = list(stale.values())
    SupersededResult.objects.bulk_create([SupersededResult(
        run_id=run.pk, item_id=row["item_id"], sample_index=row["sample_index"], item_version=row["item_version"],
        result_id=row["id"], is_correct=row["is_correct"], row=row, superseded_by=user) for row in rows])
    Result.objects.filter(pk__in=[row["id"] for row in rows]).delete()
    current = (SupersededResult.objects.filter(run=run, item_version=F("item__content_version"))
               .exclude(item__status=ItemStatus.REJECTED).order_by("superseded_at", "pk"))
    answered = set(Result.objects.filter(run=run).values_list("item_id", "sample_index"))
    back: dict[tuple[int, int], SupersededResult] = {}
    for old in current:
        if (old.item_id, old.sample_index) not in answered and not old.row.get("error"):
            back[(old.item_id, old.sample_index)] = old  # the newest wins
    restored = [_result(old.row) for old in back.values()]
    created = [result.created_at for result in restored]
    Result.objects.bulk_create(restored)  # which sets created_at to now (auto_now_add): the row's own, again
    for result, at in zip(restored, created, strict=True):
        result.created_at = at
    Result.objects.bulk_update(restored, ["created_at"])
    SupersededResult.objects.filter(pk__in=[old.pk for old in back.values()]).delete()
    return len(rows), len(back)
