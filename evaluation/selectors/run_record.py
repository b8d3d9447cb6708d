"""What happened in a run, counted from its rows: errors, truncated and cached rows, tokens actually spent,
abandoned requests and the commonest error (for the run page, the API and `evaluate`'s JSON line)."""
from __future__ import annotations

from django.db.models import Count, IntegerField, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from evaluation.models import Result, Run, SupersededResult
from evaluation.statistics.metrics import cost


def run_record_counts(*, run: Run) -> dict:
    """``rows``, ``errors`` (rows whose request failed for good), ``failed_requests`` (the requests those rows made,
    every retry counted: what a circuit breaker's "N consecutive failed requests" counts), ``truncated`` (a call
    cut at the token cap), ``cached`` (every call from the cache),
    ``tokens_spent_in`` / ``tokens_spent_out`` (calls not answered from the cache), ``abandoned_requests``
    (attempts that timed out: the server may have kept generating them, their tokens are not in the
    spent counts; at most ``abandoned_tokens_max`` = that x max_tokens), ``commonest_error`` (message and count,
    or None), ``error_classes`` ({class: rows}), ``status`` and ``failure_reason``; ``superseded_rows`` and
    ``superseded_tokens_spent_in`` / ``_out``: the rows a refresh replaced and the tokens they had spent, which the
    run spent too (the counts above are of the current rows); ``cost_spent``: the price of every token the run spent
    (current and superseded rows, no call answered from the cache), None without a price, beside the summary's
    ``cost`` (the current rows' tokens, cached calls included: what the answers as they stand cost)."""
    # One query: the rows grouped by (error class, error message), each group with its sums; the failed
    # groups give the commonest message and the rows per class, the sum of all groups the totals.
    groups = (Result.objects.filter(run=run).values_list("error_class", "error")
              .annotate(n=Count("pk"), truncated=Count("pk", filter=Q(truncated=True)),
                        cached=Count("pk", filter=Q(cached=True)), spent_in=Sum("spent_tokens_in"),
                        spent_out=Sum("spent_tokens_out"), timeouts=Sum("timeouts"),
                        finish_reason_missing=Count("pk", filter=Q(finish_reason="")), attempts=Sum("attempts")))
    totals = {"rows": 0, "errors": 0, "truncated": 0, "cached": 0, "spent_in": 0, "spent_out": 0, "timeouts": 0,
              "finish_reason_missing": 0, "failed_attempts": 0}
    by_message: dict[str, int] = {}
    classes: dict[str, int] = {}
    for error_class, error, n, truncated, cached, spent_in, spent_out, timeouts, no_reason, attempts in groups:
        totals["rows"] += n
        totals["truncated"] += truncated
        totals["spent_in"] += spent_in or 0
        totals["spent_out"] += spent_out or 0
        totals["timeouts"] += timeouts or 0
        if error:
            totals["errors"] += n
            totals["failed_attempts"] += max(attempts or 0, n)  # a failed row made at least one request
            by_message[error] = by_message.get(error, 0) + n
            classes[error_class] = classes.get(error_class, 0) + n
        else:
            totals["cached"] += cached
            totals["finish_reason_missing"] += no_reason
    common = min(({"error": e, "n": n} for e, n in by_message.items()), key=lambda c: (-c["n"], c["error"]),
                 default=None)
    classes = dict(sorted(classes.items(), key=lambda kv: -kv[1]))
    abandoned = totals["timeouts"] or 0
    # A run page's run carries its count of superseded rows (evaluation.views.runs.with_run): none, no query.
    superseded = {"n": 0, "spent_in": 0, "spent_out": 0} if getattr(run, "superseded", None) == 0 else (
        SupersededResult.objects.filter(run=run).aggregate(
            n=Count("pk"), spent_in=Sum(Cast(KeyTextTransform("spent_tokens_in", "row"), IntegerField())),
            spent_out=Sum(Cast(KeyTextTransform("spent_tokens_out", "row"), IntegerField()))))
    max_tokens = (run.params or {}).get("max_tokens")
    superseded_in, superseded_out = superseded["spent_in"] or 0, superseded["spent_out"] or 0
    spent = cost(tokens_in=(totals["spent_in"] or 0) + superseded_in,
                 tokens_out=(totals["spent_out"] or 0) + superseded_out,
                 price_in_per_mtok=run.price_in_per_mtok, price_out_per_mtok=run.price_out_per_mtok)
    return {
        "rows": totals["rows"], "errors": totals["errors"], "truncated": totals["truncated"],
        "cached": totals["cached"], "tokens_spent_in": totals["spent_in"] or 0,
        "tokens_spent_out": totals["spent_out"] or 0, "abandoned_requests": abandoned,
        "abandoned_tokens_max": abandoned * max_tokens if max_tokens else None,
        "finish_reason_missing": totals["finish_reason_missing"],
        "failed_requests": totals["failed_attempts"],
        "commonest_error": {"message": common["error"], "count": common["n"]} if common else None,
        "error_classes": {k or "other": v for k, v in classes.items()},
        "status": run.status, "failure_reason": run.failure_reason,
        "superseded_rows": superseded["n"], "superseded_tokens_spent_in": superseded_in,
        "superseded_tokens_spent_out": superseded_out, "cost_spent": spent,
    }


def run_record_text(counts: dict) -> str:
    """One line for people: what happened in the run."""
    parts = [f"{counts['rows']} rows", f"{counts['errors']} errors", f"{counts['truncated']} truncated at the token cap",
             f"{counts['cached']} from the cache",
             f"tokens spent {counts['tokens_spent_in']} in / {counts['tokens_spent_out']} out"]
    if counts["abandoned_requests"]:
        bound = counts["abandoned_tokens_max"]
        parts.append(f"{counts['abandoned_requests']} timed-out requests abandoned"
                     + (f" (up to {bound} uncounted output tokens)" if bound else ""))
    if counts["commonest_error"]:
        parts.append(f"commonest error ({counts['commonest_error']['count']}x): {counts['commonest_error']['message']}")
    if counts["failure_reason"]:
        parts.append(f"failed: {counts['failure_reason']}")
    return "; ".join(parts)
