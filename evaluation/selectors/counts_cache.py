"""A cache of finished runs' row counts, so that the leaderboard and the run list need not read every row on
every request.

A finished run's rows do not change: a run gets rows only while it is queued or running, and
resuming one makes it queued again with a new start time. So the counts of a *finished* run are
cached under a key made of what would change them: the run (id, creation, status, start and end
of its latest launch), how they were counted (fresh rows only, which items, crossed with which
reference run), and the state of the items (latest edit, count, sum of versions: an item edit
changes which rows are fresh). Active and cancelled runs are always counted afresh (a cancelled
run's requests in flight still write their rows). Uses Django's cache (Redis when REDIS_URL is
set, else the process's memory).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from django.core.cache import cache
from django.db.models import Count, Max, Sum

from annotation.models import Item
from evaluation.models import Run, RunStatus

TIMEOUT_S = 24 * 3600
PREFIX = "evaluation:run-counts:v3"  # v3: interval bounds exactly 0 and 1 at the edges (paired.wilson); v2: item_wilson


def _ts(value: datetime | None) -> str:
    return f"{value.timestamp():.6f}" if value else "-"


def _run_stamp(run: Run) -> str | None:
    if run.status != RunStatus.FINISHED:
        return None
    return f"{run.pk}:{_ts(run.created_at)}:{_ts(run.started_at)}:{_ts(run.finished_at)}"


def items_stamp() -> str:
    """The state of the items (one small query)."""
    agg = Item.objects.aggregate(latest=Max("updated_at"), count=Count("pk"), versions=Sum("version"))
    return f"{_ts(agg['latest'])}:{agg['count']}:{agg['versions'] or 0}"


def keys(*, runs: Sequence[Run], fresh_only: bool, item_ids: Sequence[int] | None,
         reference: Run | None) -> dict[int, str]:
    """The cache key of each cacheable run's counts (runs not finished have none)."""
    ref = "-"
    if reference is not None:
        ref = _run_stamp(reference)
        if ref is None:
            return {}
    stamps = {run.pk: _run_stamp(run) for run in runs}
    if not any(stamps.values()):
        return {}
    items = "all" if item_ids is None else hashlib.sha1(",".join(map(str, item_ids)).encode()).hexdigest()
    state = items_stamp()
    return {pk: f"{PREFIX}:{stamp}:{int(fresh_only)}:{items}:{ref}:{state}" for pk, stamp in stamps.items() if stamp}


def get_many(found_keys: dict[int, str]) -> dict[int, object]:
    if not found_keys:
        return {}
    hits = cache.get_many(list(found_keys.values()))
    return {pk: hits[key] for pk, key in found_keys.items() if key in hits}


def set_many(found_keys: dict[int, str], values: dict[int, object]) -> None:
    entries = {found_keys[pk]: value for pk, value in values.items() if pk in found_keys}
    if entries:
        cache.set_many(entries, TIMEOUT_S)


def remembered(name: str, runs: Sequence[Run], compute):
    """``compute()`` for these runs, cached while all of them are finished and unchanged (and the items too)."""
    stamps = [_run_stamp(run) for run in runs]
    if not runs or None in stamps:
        return compute()
    digest = hashlib.sha1("|".join(sorted(stamps)).encode()).hexdigest()
    key = f"{PREFIX}:{name}:{digest}:{items_stamp()}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, TIMEOUT_S)
    return value
