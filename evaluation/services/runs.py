"""Writes of the evaluation app: endpoints, launching, cancelling and resuming runs.

A refused call raises an `evaluation.errors` / `foundation.errors` ServiceError (model
validation in `full_clean()` raises Django's ValidationError, which the mappers accept too).
"""
from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from urllib.parse import urlparse

from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils import timezone
from django.utils.translation import get_language, override

from annotation.models import Item, ItemStatus
from evaluation.errors import EmptySelection, NoDemonstrations
from evaluation.execution import chunks as execution
from evaluation.execution import heartbeats, planning, queueing
from evaluation.model_calls import preflight
from evaluation.models import (
    TABLE9_PRESET,
    EndpointKind,
    ModelEndpoint,
    OptionOrder,
    Result,
    Run,
    RunStatus,
)
from evaluation.models.endpoints import destination_policy
from evaluation.prompting.methods import get_method
from evaluation.selectors.runs import select_item_ids, select_items  # noqa: F401 - select_item_ids: sweeps take it here
from evaluation.services.superseding import supersede_stale_rows
from foundation.errors import Conflict, Invalid, NotFound
from foundation.words import gettext


@transaction.atomic
def endpoint_create(*, name: str, kind: str = EndpointKind.OPENAI, base_url: str = "", model: str,
                    api_key_env: str = "", max_concurrency: int = 8, table9_preset: bool = False,
                    **fields) -> ModelEndpoint:
    """A new endpoint; ``table9_preset`` sets the paper's Table 9 generation parameters over the given ones."""
    if table9_preset:
        fields.update(TABLE9_PRESET)
    endpoint = ModelEndpoint(name=name, kind=kind, base_url=base_url, model=model, api_key_env=api_key_env,
                             max_concurrency=max_concurrency, **fields)
    endpoint.full_clean()
    endpoint.save()
    return endpoint


#: The settings `evaluate` can give an endpoint (generation parameters and the timeout): part of its identity.
CLI_SETTINGS = ("temperature", "top_p", "max_tokens", "seed", "timeout_s", "extra_params")


def _settings_label(settings: dict) -> str:
    shown = {k: v for k, v in settings.items() if k != "extra_params" and v is not None}
    shown.update(settings.get("extra_params") or {})
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items())


#: What an edit may change (the rest, id and created_at, is the endpoint's identity).
ENDPOINT_FIELDS = ("name", "kind", "base_url", "model", "api_key_env", "temperature", "top_p", "max_tokens", "seed",
                   "extra_params", "max_concurrency", "requests_per_minute", "timeout_s", "max_attempts",
                   "retry_budget_s", "price_in_per_mtok", "price_out_per_mtok", "use_cache")


def endpoint_edit_conflict(endpoint: ModelEndpoint, read: int) -> Conflict:
    """The refusal of a change made from version ``read`` of an endpoint saved since (the edit page, the API, the
    admin)."""
    return Conflict(gettext("Endpoint %(name)s was changed by someone else since this version was read (version "
                            "%(read)s; it is now at version %(now)s). Nothing was saved: reload it and make the "
                            "change again.", name=repr(endpoint.name), read=read, now=endpoint.version),
                    code="edit_conflict", field="version", details={"version": endpoint.version})


@transaction.atomic
def endpoint_update(*, endpoint: ModelEndpoint, table9_preset: bool = False, expected_version: int | None = None,
                    **fields) -> ModelEndpoint:
    """Change an endpoint's settings (validated as on creation; the key is still only a variable's name).

    ``expected_version`` is the version the change was made from (the edit page and the API send it): when
    the endpoint was saved since, the change is refused (Conflict) rather than silently undoing the other one.
    Runs already launched keep the generation parameters they were launched with (Run.params)."""
    unknown = sorted(set(fields) - set(ENDPOINT_FIELDS))
    if unknown:
        raise Invalid(gettext("Not a setting of an endpoint: %(names)s.", names=", ".join(unknown)), field=unknown[0])
    if table9_preset:
        fields.update(TABLE9_PRESET)
    endpoint = ModelEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if expected_version is not None and expected_version != endpoint.version:
        raise endpoint_edit_conflict(endpoint, expected_version)
    for name, value in fields.items():
        setattr(endpoint, name, value)
    endpoint.full_clean()
    endpoint.save()
    return endpoint


@transaction.atomic
def endpoint_for_cli(*, base_url: str = "", model: str = "", api_key_env: str = "", builtin: str = "",
                     concurrency: int | None = None, name: str = "", settings: dict | None = None) -> ModelEndpoint:
    """The endpoint the `evaluate` command names: the stored one called ``name`` (used as it is), or the one
    with this URL, model, key variable and generation settings (``settings``: temperature, top_p, max_tokens,
    seed, timeout_s, extra_params; unset ones are the defaults), created on first use. A second endpoint with
    other settings on the same URL is another endpoint. --concurrency updates its limit."""
    if name:
        endpoint = ModelEndpoint.objects.select_for_update().filter(name=name).first()
        if endpoint is None:
            known = ", ".join(ModelEndpoint.objects.order_by("name").values_list("name", flat=True)[:20])
            raise NotFound(gettext("No endpoint named %(name)s; known: %(known)s", name=repr(name), known=known) if known
                           else gettext("No endpoint named %(name)s", name=repr(name)), field="endpoint")
        if concurrency and endpoint.max_concurrency != concurrency:
            endpoint.max_concurrency = concurrency
            endpoint.save(update_fields=["max_concurrency"])
        return endpoint
    settings = {k: v for k, v in (settings or {}).items() if k in CLI_SETTINGS}
    lookup = {"temperature": None, "top_p": None, "max_tokens": None, "seed": None, "timeout_s": 120.0,
              "extra_params": {}, **{k: v for k, v in settings.items() if v is not None}}
    if builtin:
        kind, base_url, model, name = EndpointKind.BUILTIN, "", builtin, f"builtin:{builtin}"
        lookup = {}
    else:
        kind, name = EndpointKind.OPENAI, f"{model} @ {urlparse(base_url).netloc or base_url}"
        label = _settings_label({k: v for k, v in lookup.items() if k != "timeout_s" or v != 120.0})
        if label:
            name = f"{name} ({label})"[:90]
    candidates = ModelEndpoint.objects.select_for_update().filter(
        kind=kind, base_url=base_url, model=model, api_key_env=api_key_env,
        **{k: v for k, v in lookup.items() if k != "extra_params"}
    ).order_by("pk")
    # JSON equality in Python: the same on PostgreSQL and SQLite.
    endpoint = next((e for e in candidates if not lookup or (e.extra_params or {}) == lookup["extra_params"]), None)
    if endpoint is None:
        suffix, base = 1, name
        while ModelEndpoint.objects.filter(name=name).exists():
            suffix += 1
            name = f"{base} ({suffix})"
        endpoint = ModelEndpoint(name=name, kind=kind, base_url=base_url, model=model, api_key_env=api_key_env,
                                 max_concurrency=concurrency or 8, **lookup)
        endpoint.full_clean()
        endpoint.save()
    elif concurrency and endpoint.max_concurrency != concurrency:
        endpoint.max_concurrency = concurrency
        endpoint.save(update_fields=["max_concurrency"])
    return endpoint


#: How long a launch from a page or the API waits for each endpoint's check (the CLI waits up to 15 s).
LAUNCH_CHECK_TIMEOUT_S = 8.0


def endpoints_check(*, endpoints: Sequence[ModelEndpoint], timeout_s: float = LAUNCH_CHECK_TIMEOUT_S,
                    field: str = "endpoints") -> list[str]:
    """Check each remote endpoint before runs are launched on it (``preflight.check_endpoint``: it answers and
    serves the model): PreflightRefused, naming the endpoint (and ``field``), for the first one in the order
    given that cannot serve a run; else the warnings. Built-ins need no check.

    The key is the workers' (this web process may not hold it): a key variable not set here, and a 401/403
    to a check made without it, are warnings. The checks run at once, one thread per distinct (URL, model,
    key variable), and the whole launch waits at most ``timeout_s`` plus a second: a check still going
    then (redirects, a slow DNS) counts as no answer."""
    remote = [e for e in dict.fromkeys(endpoints) if not e.is_builtin]
    policy = destination_policy()  # where endpoints may point: a refused address reads as an unreachable one
    targets: dict[tuple[str, str, str], float] = {}
    for e in remote:
        target = (e.base_url, e.model, e.api_key_env)
        targets[target] = min(targets.get(target, timeout_s), e.timeout_s, timeout_s)

    language = get_language()  # each check runs in its own thread: its messages in the caller's language

    def check(target) -> preflight.Preflight | preflight.PreflightRefused:
        base_url, model, api_key_env = target
        with override(language):
            return _check(target, base_url, model, api_key_env)

    def _check(target, base_url, model, api_key_env) -> preflight.Preflight | preflight.PreflightRefused:
        try:
            return preflight.check_endpoint(base_url=base_url, model=model, api_key_env=api_key_env,
                                            timeout_s=targets[target], key_elsewhere=True, policy=policy)
        except preflight.PreflightRefused as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - whatever a strange endpoint makes the client raise is its refusal
            return preflight.PreflightRefused(gettext("cannot ask %(url)s: %(error)s", url=base_url, error=type(exc).__name__),
                                              error_class="connection")

    found: dict = {}
    if targets:
        pool = ThreadPoolExecutor(max_workers=min(len(targets), 50), thread_name_prefix="preflight")
        futures = {target: pool.submit(check, target) for target in targets}
        wait(futures.values(), timeout=max(targets.values()) + 1.0)
        pool.shutdown(wait=False, cancel_futures=True)  # a check still going ends on its own timeouts
        for target, future in futures.items():
            found[target] = future.result() if future.done() else preflight.PreflightRefused(
                gettext("no answer from %(url)s within %(s)s s", url=target[0], s=f"{targets[target]:.0f}"),
                error_class="timeout")
    warnings: list[str] = []
    for endpoint in remote:
        outcome = found[(endpoint.base_url, endpoint.model, endpoint.api_key_env)]
        if isinstance(outcome, preflight.PreflightRefused):
            raise preflight.PreflightRefused(gettext("Endpoint %(name)s cannot serve a run: %(why)s. No run was launched.",
                                                     name=repr(endpoint.name), why=outcome.message),
                                             error_class=outcome.error_class, field=field)
        warnings += [f"{endpoint.name}: {warning}" for warning in outcome.warnings]
    return warnings


@transaction.atomic
def runs_launch(*, methods: Sequence[str], **selection) -> list[Run]:
    """One run per method over the same selection: all of them or, if one is refused, none."""
    return [run_launch(method=method, **selection) for method in methods]


@transaction.atomic
def sweep_launch(*, endpoints: Sequence[ModelEndpoint], methods: Sequence[str], note: str = "",
                 **selection) -> list[Run]:
    """A sweep: one run per (endpoint, method) over one item selection, all of them or none.

    The runs share a note naming the sweep (its size and first run) unless a note is given, so that
    the run list shows which runs were launched together."""
    if not endpoints:
        raise Invalid(gettext("Choose at least one endpoint."), field="endpoints")
    if not methods:
        raise Invalid(gettext("Choose at least one method."), field="methods")
    endpoints = list(dict.fromkeys(endpoints))
    methods = list(dict.fromkeys(methods))
    runs = [run_launch(endpoint=endpoint, method=method, note=note, **selection)
            for endpoint in endpoints for method in methods]
    if not note and len(runs) > 1:
        label = f"sweep from #{runs[0].pk}: {len(endpoints)} endpoint(s) x {len(methods)} method(s)"
        Run.objects.filter(pk__in=[r.pk for r in runs]).update(note=label)
        for run in runs:
            run.note = label
    return runs


@transaction.atomic
def run_launch(*, endpoint: ModelEndpoint, method: str, split: str = "", item_status: str = "",
               question_type: str = "", ids: Sequence[int] = (), limit: int | None = None, seed: int = 42,
               samples: int = 1, k: int | None = None, option_order: str = OptionOrder.ORIGINAL,
               option_labels: str = "numbers", chunk_size: int = 400, user=None, note: str = "",
               enqueue: bool = True) -> Run:
    """Create a run over a fixed item selection and queue its chunks (after commit)."""
    spec = get_method(method)
    item_ids, left_out = select_items(split=split, item_status=item_status, question_type=question_type, ids=ids,
                                      limit=limit)
    if not item_ids:
        raise EmptySelection(gettext("No items match this selection."))
    if spec.shots and not enough_demonstrations(spec.shots, item_ids):
        raise NoDemonstrations(gettext("%(method)s needs demonstrations: import the train split first.", method=method),
                               field="method")
    run = Run(
        endpoint=endpoint, method=method, k=k or spec.default_k, split=split, item_status=item_status,
        question_type=question_type, limit=limit, requested_ids=list(ids), item_ids=item_ids, left_out_ids=left_out,
        seed=seed,
        samples=samples, option_order=option_order, option_labels=option_labels, prompt_version=spec.version(),
        rotations=execution.rotations_for(option_order=option_order, item_ids=item_ids),
        params=endpoint.params_for(method), chunk_size=chunk_size, created_by=user, note=note,
        started_at=timezone.now(), price_in_per_mtok=endpoint.price_in_per_mtok,
        price_out_per_mtok=endpoint.price_out_per_mtok,
    )
    run.full_clean()
    run.save()
    if enqueue:
        queueing.chunks_enqueue(run, run.item_ids)
    return run


def enough_demonstrations(shots: int, item_ids: list[int]) -> bool:
    """Every selected item gets ``shots`` usable train items as demonstrations (never itself)."""
    pool = set(planning.demonstration_pool())
    return len(pool) > shots or (len(pool) == shots and not pool.intersection(item_ids))


def missing_item_ids(run: Run) -> list[int]:
    """Items of the run with at least one (item, sample) row missing or failed; a rejected (deleted) item only
    when a row of it is missing (its failed rows are not asked again: it is left out of every table)."""
    done: dict[int, int] = {}
    rows: dict[int, int] = {}
    for item_id, ok in Result.objects.filter(run=run).values_list(
            "item_id", ExpressionWrapper(Q(error=""), output_field=BooleanField())):
        rows[item_id] = rows.get(item_id, 0) + 1
        done[item_id] = done.get(item_id, 0) + bool(ok)
    rejected = _rejected(run.item_ids)
    need = run.rows_per_item
    return [i for i in run.item_ids if (rows.get(i, 0) if i in rejected else done.get(i, 0)) < need]


def _rejected(item_ids: Sequence[int]) -> set[int]:
    return set(Item.objects.filter(pk__in=list(item_ids), status=ItemStatus.REJECTED).values_list("pk", flat=True))


def _leave_out_rejected(run: Run) -> list[int]:
    """Take the rejected (deleted) items the run has no row of out of its items (into ``left_out_ids``), so that
    a resume never asks them; returns them. An item with rows stays (its rows are the run's record)."""
    rejected = _rejected(run.item_ids)
    if not rejected:
        return []
    answered = set(Result.objects.filter(run=run, item_id__in=rejected).values_list("item_id", flat=True))
    gone = [i for i in run.item_ids if i in rejected and i not in answered]
    if gone:
        run.item_ids = [i for i in run.item_ids if i not in set(gone)]
        run.left_out_ids = [*run.left_out_ids, *gone]
        run.save(update_fields=["item_ids", "left_out_ids"])
    return gone


@transaction.atomic
def run_cancel(*, run: Run) -> Run:
    """Stop a run: queued chunks do nothing, running chunks send no new requests (in flight ones finish)."""
    run = Run.objects.select_for_update().get(pk=run.pk)
    if run.is_active:
        run.status = RunStatus.CANCELLED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
    return run


@transaction.atomic
def run_resume(*, run: Run, enqueue: bool = True) -> Run:
    """Re-launch a run: only (item, sample) rows that are missing or failed are computed (a stale row is an
    answer the run gave: ``run_refresh`` asks its item again); rejected items not asked yet are left out.

    A run with nothing left to compute is (or stays) finished instead of waiting in the
    queue for chunks that will never come.
    """
    run = Run.objects.select_for_update().get(pk=run.pk)
    _leave_out_rejected(run)
    return _relaunch(run, enqueue=enqueue)


def _relaunch(run: Run, *, enqueue: bool) -> Run:
    now = timezone.now()
    missing = missing_item_ids(run)
    if not missing:
        if run.status != RunStatus.FINISHED:
            # A run that had ended (cancelled or failed with its last rows written meanwhile) keeps the end of its
            # execution: the time since it was idle, not executing (its wall time).
            run.status, run.finished_at = RunStatus.FINISHED, run.finished_at or now
            run.save(update_fields=["status", "finished_at"])
        return run
    if run.started_at:  # the execution that ends here stays in the run's wall time
        end = run.finished_at or now
        run.earlier_wall_s = (run.earlier_wall_s or 0.0) + max(0.0, (end - run.started_at).total_seconds())
    run.status = RunStatus.QUEUED
    run.started_at = now
    run.finished_at = None
    run.save(update_fields=["status", "started_at", "finished_at", "earlier_wall_s"])
    if enqueue:
        queueing.chunks_enqueue(run, missing)
    return run


@transaction.atomic
def run_refresh(*, run: Run, user=None, enqueue: bool = True) -> tuple[Run, int]:
    """Bring a finished (or cancelled, or failed) run up to date: every stale row (its item's content changed since
    the run asked it) moves, whole, to SupersededResult, and the run resumes, so that it asks those items again at
    their current content, as it asked every other item (same method, endpoint, parameters, seed, prompt). Rows of
    rejected items are not refreshed (they are left out of the tables). Returns the run and the rows superseded.

    Why move, not keep both: a run has one row per (run, item, sample) (exactly-once resume, every metric and
    table counts them so); the old answers stay on record, with their ids, for audits and their judge labels. An
    old answer asked at an item's current content (an edit undone since a refresh) is the run's row again, not asked
    again (services.superseding)."""
    run = Run.objects.select_for_update().get(pk=run.pk)
    if run.is_active:
        raise Conflict(gettext("Run %(n)s is still running: refresh it once it has finished (or cancel it first).",
                               n=run.pk), code="run_active")
    _leave_out_rejected(run)
    superseded, _ = supersede_stale_rows(run, user)  # an answer at an item's current content comes back instead
    return _relaunch(run, enqueue=enqueue), superseded


def run_execute_in_process(*, run: Run) -> execution.ChunkReport:
    """Compute all missing rows of a run in this process (no worker needed), then close it.

    Its heartbeat covers all of the run's items, so the periodic reconciliation never hands them to a
    worker meanwhile (however long one request takes)."""
    with heartbeats.heartbeat(run_id=run.pk, item_ids=list(run.item_ids)):
        return execution.execute_chunk(run_id=run.pk, item_ids=None)  # which marks the run finished
