"""Per-item outcomes of many runs, crossed in the database: the items every run has, and each run's paired
table against a reference run.

An item's outcome in a run is its first sample (with circular order: right only if every
rotation of the first sample is). Only fresh rows count: the row's item version is the item's
current one. Most items never change content (their highest content version is 1: every row of
them is fresh), so items join only when their content has changed at some time, and the queries
read the result table through its covering index (``result_run_scores``).
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from django.db import connection

from evaluation.models import Run
from evaluation.prompting.methods import METHODS
from evaluation.selectors import counts_cache
from evaluation.selectors.aggregates import CHANGED_ITEMS, RowCounts, id_list, outcome_params, outcome_sql, tables
from evaluation.statistics.paired import Paired


def common_item_ids(runs: Sequence[Run]) -> list[int]:
    """Items every one of the runs answered, fresh: a multiple-choice run with a scored row of the item, a
    free-text run with a row without error (one query; cached while the runs are finished and unchanged, see
    evaluation.selectors.counts_cache).

    A free-text row is never scored in the row (``is_correct`` stays empty: the judge grades it), and its cell
    counts every row without an infrastructure error, a missing answer as wrong (``judge.free_text_accuracy``), as
    a multiple-choice cell counts a parse failure: so that row is the item answered, and a free-text cell is held
    to the common items like any other."""
    if not runs:
        return []
    # A name of its own: lists cached under the former rule (free-text runs answered nothing) stay unread.
    return counts_cache.remembered("common-items:answered", runs, lambda: _common_item_ids(runs))


def _common_item_ids(runs: Sequence[Run]) -> list[int]:
    result, item = tables()
    runs_in, params = id_list([r.pk for r in runs])
    free_text = [r.pk for r in runs if getattr(METHODS.get(r.method), "free_text", False)]
    answered = "r.is_correct IS NOT NULL"
    if free_text:
        free_in, free_params = id_list(free_text)
        answered, params = f"({answered} OR r.run_id IN ({free_in}))", params + free_params
    sql = f"""
        SELECT r.item_id FROM {result} r LEFT JOIN {CHANGED_ITEMS.format(item=item)} x ON x.id = r.item_id
        WHERE r.run_id IN ({runs_in}) AND r.error = '' AND {answered}
              AND (x.id IS NULL OR r.item_version = x.version)
        GROUP BY r.item_id HAVING COUNT(DISTINCT r.run_id) = %s ORDER BY r.item_id"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params + [len(runs)])
        return [row[0] for row in cursor.fetchall()]


def paired_counts(*, runs: Sequence[Run], reference: Run, counts: Mapping[int, RowCounts],
                  item_ids: Sequence[int] | None = None) -> dict[int, Paired]:
    """Each run's outcomes crossed with the reference's on the (item, version) pairs both have, with how many
    outcomes each side has without a partner.

    ``counts`` are the runs' row counts made with this reference (``aggregates.row_counts(reference=...)``):
    they already cross every run with one row per sample. A run with several rows per sample (circular
    order) takes one more query, and so does the reference's own number of outcomes when it is such a run."""
    only, only_params = "", []
    if item_ids is not None:
        if not item_ids:
            return {r.pk: Paired(0, 0, 0, 0, 0, 0) for r in runs}
        items_in, only_params = id_list(item_ids)
        only = f"AND r.item_id IN ({items_in})"
    ref_sql, ref_params = outcome_sql(reference, only=only), outcome_params(reference, only_params)
    crossed: dict[int, dict] = {}
    totals: dict[int, int] = {}
    for run in runs:
        c = counts.get(run.pk)
        if run.rotations == 1 and c is not None:
            crossed[run.pk], totals[run.pk] = c.crossed or {}, c.outcomes
    with connection.cursor() as cursor:
        if reference.rotations == 1:
            ref_total = counts[reference.pk].outcomes if reference.pk in counts else 0
        else:
            cursor.execute(f"SELECT COUNT(*) FROM ({ref_sql}) o", ref_params)
            ref_total = cursor.fetchone()[0]
        for run in (r for r in runs if r.rotations > 1):
            cursor.execute(f"""
                WITH ref AS ({ref_sql}), o AS ({outcome_sql(run, only=only)})
                SELECT ref.ok, o.ok, COUNT(*) FROM o
                LEFT JOIN ref ON ref.item_id = o.item_id AND ref.item_version = o.item_version GROUP BY 1, 2""",
                           ref_params + outcome_params(run, only_params))
            rows = cursor.fetchall()
            totals[run.pk] = sum(count for _, _, count in rows)
            crossed[run.pk] = {(int(r), int(o)): count for r, o, count in rows if r is not None}
    out = {}
    for run in runs:
        cells = crossed.get(run.pk, {})
        rr, rw, wr, ww = (cells.get(k, 0) for k in ((1, 1), (1, 0), (0, 1), (0, 0)))
        pairs = rr + rw + wr + ww
        out[run.pk] = Paired(both_right=rr, ref_right_other_wrong=rw, ref_wrong_other_right=wr, both_wrong=ww,
                             ref_only=ref_total - pairs, other_only=totals.get(run.pk, 0) - pairs)
    return out


def circular_verdicts(runs: Sequence[Run], item_ids: Sequence[int] | None = None) -> dict[int, tuple[int, int]]:
    """For runs with several rows per sample (circular order): (items right in every rotation of the first
    sample, items with every rotation scored), fresh rows only; one query (cached while the runs are
    finished and unchanged)."""
    several = [r for r in runs if r.rotations > 1]
    if not several or item_ids is not None and not item_ids:
        return {}
    digest = "all" if item_ids is None else hashlib.sha1(",".join(map(str, item_ids)).encode()).hexdigest()
    return counts_cache.remembered(f"circular:{digest}", several,
                                   lambda: _circular_verdicts(several, item_ids))


def _circular_verdicts(runs: Sequence[Run], item_ids: Sequence[int] | None) -> dict[int, tuple[int, int]]:
    result, item = tables()
    q = connection.ops.quote_name
    run_table = q(Run._meta.db_table)
    runs_in, params = id_list([r.pk for r in runs])
    only = ""
    if item_ids is not None:
        items_in, item_params = id_list(item_ids)
        only = f"AND r.item_id IN ({items_in})"
        params += item_params
    sql = f"""
        SELECT run_id, SUM(ok), COUNT(*) FROM (
            SELECT r.run_id, MIN(CASE WHEN r.is_correct THEN 1 ELSE 0 END) AS ok
            FROM {result} r JOIN {run_table} u ON u.id = r.run_id
            LEFT JOIN {CHANGED_ITEMS.format(item=item)} x ON x.id = r.item_id
            WHERE r.run_id IN ({runs_in}) {only} AND r.sample_index < u.rotations AND r.error = ''
                  AND r.is_correct IS NOT NULL AND (x.id IS NULL OR r.item_version = x.version)
            GROUP BY r.run_id, r.item_id, r.item_version, u.rotations HAVING COUNT(*) = u.rotations
        ) v GROUP BY run_id"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {run_id: (int(right or 0), int(n)) for run_id, right, n in cursor.fetchall()}


def run_outcomes(runs: Sequence[Run], item_ids: Sequence[int] | None = None) -> dict[int, dict[tuple[int, int], bool]]:
    """Each run's outcomes, {(item id, item version): right}: fresh, complete first samples (as the paired tests
    count them), optionally only these items; one query for all the runs."""
    out: dict[int, dict[tuple[int, int], bool]] = {r.pk: {} for r in runs}
    if not runs or item_ids is not None and not item_ids:
        return out
    only, only_params = "", []
    if item_ids is not None:
        items_in, only_params = id_list(item_ids)
        only = f"AND r.item_id IN ({items_in})"
    parts, params = [], []
    for run in runs:
        parts.append(f"SELECT %s AS run_id, o.item_id, o.item_version, o.ok FROM ({outcome_sql(run, only=only)}) o")
        params += [run.pk, *outcome_params(run, only_params)]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        for run_id, item_id, version, ok in cursor.fetchall():
            out[run_id][(item_id, version)] = bool(ok)
    return out
