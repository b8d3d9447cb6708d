"""`python manage.py evaluate`: launch runs of one or more methods and print one JSON line per run.

The endpoint is a stored one (``--endpoint NAME``, used with its own settings), a built-in model, or
an OpenAI-compatible URL with the generation settings given here (``--max-tokens``, ``--temperature``,
``--top-p``, ``--seed``, ``--timeout``, ``--table9``); URL, model, key variable and settings together
name the endpoint, created on first use. Before any run, a preflight request checks the endpoint and
refuses with the reason. The command exits non-zero when a run fails or all its rows are errors.

``--refresh RUN`` launches nothing: it refreshes a finished run as the run page and the API do
(``services.run_refresh``: its stale rows kept whole as superseded rows, their items asked again with the run's own
method, endpoint and settings), queued like a launch or computed with ``--wait``; it says how many rows it superseded
and how many items it asks again.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from django.core.management.base import CommandError
from django.db import transaction

from evaluation.management.computing import ComputingCommand
from evaluation.model_calls import preflight
from evaluation.model_calls.builtin_models import BUILTIN_MODELS
from evaluation.models import TABLE9_EXTRA, TABLE9_PRESET, OptionOrder, Run, RunStatus
from evaluation.models.endpoints import destination_policy
from evaluation.prompting.methods import METHODS
from evaluation.selectors import analysis
from evaluation.selectors import runs as selectors
from evaluation.selectors.run_record import run_record_counts, run_record_text
from evaluation.services import runs as services
from foundation.error_mapping import REFUSED, error_text

GENERATION_FLAGS = ("max_tokens", "temperature", "top_p", "timeout", "table9")
#: What only a launch takes: a refresh asks again as the run asked (its own method, endpoint, selection, settings).
LAUNCH_FLAGS = ("model", "api_key_env", "method", "split", "limit", "concurrency", "seed", "max_tokens", "temperature",
                "top_p", "timeout", "table9", "no_preflight", "samples", "k", "option_order", "permute_options",
                "chunk_size")


def workers_available(timeout: float = 1.0) -> bool:
    """True when a Celery worker answers a ping; on the embedded filesystem broker (no ping), when a worker of this
    machine left its mark (evaluation.execution.embedded_workers)."""
    from celery import current_app as app
    from django.conf import settings

    from evaluation.execution import embedded_workers

    if embedded_workers.embedded():
        return embedded_workers.running()
    if not str(settings.CELERY_BROKER_URL).startswith(("redis://", "rediss://", "amqp://")):
        return False
    try:
        return bool(app.control.ping(timeout=timeout))
    except Exception:  # noqa: BLE001 - no broker, no workers
        return False


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def bounded_float(low: float, high: float, *, low_open: bool = False):
    """argparse type: a number in [low, high] (or (low, high] with ``low_open``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (low < value if low_open else low <= value) or value > high:
            raise argparse.ArgumentTypeError(f"must be in {'(' if low_open else '['}{low:g}, {high:g}], not {value:g}")
        return value
    return parse


class Command(ComputingCommand):
    help = ("Evaluate a model (OpenAI-compatible endpoint or built-in) with one or more prompting methods; "
            "prints one JSON line per run.")

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
        source.add_argument("--builtin", choices=BUILTIN_MODELS, help="A built-in offline model")
        source.add_argument("--endpoint", help="A stored endpoint's name: used with its own settings (edit it to "
                                               "change them)")
        source.add_argument("--refresh", type=positive_int, metavar="RUN",
                            help="Launch nothing: refresh this finished run (its stale rows kept as superseded rows, "
                                 "their items asked again, as the run page's Refresh); with --wait, wait for it")
        parser.add_argument("--model", help="Model name at the endpoint (with --base-url)")
        parser.add_argument("--api-key-env", default="", help="NAME of the environment variable holding the API key")
        parser.add_argument("--method", default="naive", help=f"Comma-separated methods: {', '.join(METHODS)}")
        parser.add_argument("--split", default="test")
        parser.add_argument("--limit", type=positive_int)
        parser.add_argument("--concurrency", type=positive_int, help="The endpoint's limit of requests in flight (all workers)")
        parser.add_argument("--seed", type=int, default=None,
                            help="The run's seed (option permutation, demonstrations, built-in models; default 42); "
                                 "with --base-url also sent as the generation seed")
        parser.add_argument("--max-tokens", type=positive_int,
                            help="Output tokens per call (default: per method, 512 for the answer-only prompts, "
                                 "1024 for free-text, 2000 for the reasoning methods; never unlimited)")
        parser.add_argument("--temperature", type=bounded_float(0, 2))
        parser.add_argument("--top-p", type=bounded_float(0, 1, low_open=True))
        parser.add_argument("--timeout", type=bounded_float(0, 3600, low_open=True),
                            help="Seconds per request before it is a timeout (retried, and recorded; default 120)")
        parser.add_argument("--table9", action="store_true",
                            help="The paper's Table 9 settings: temperature 0.95, top_p 0.95, top_k 5, max_tokens "
                                 "2000, seed 42 (explicit flags override them)")
        parser.add_argument("--no-preflight", action="store_true", help="Do not check the endpoint before the runs")
        parser.add_argument("--samples", type=positive_int, default=1, help="Rows per item (repeated sampling)")
        parser.add_argument("--k", type=positive_int, help="Samples per answer for self-consistency / complexity-cot")
        parser.add_argument("--option-order", choices=OptionOrder.values, default=None,
                            help="original; permuted (each item's options shuffled, seeded); circular (each item "
                                 "asked once per cyclic rotation of its options, right only when every rotation is)")
        parser.add_argument("--permute-options", action="store_true", help="The same as --option-order permuted")
        parser.add_argument("--chunk-size", type=positive_int, default=400)
        parser.add_argument("--wait", action="store_true",
                            help="Wait for the result: through Celery when a worker answers, else in this process")
        parser.add_argument("--in-process", action="store_true", help="With --wait: always compute in this process")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, **o):
        if o["refresh"] is not None:
            return self._refresh(o)
        if o["base_url"] and not o["model"]:
            raise CommandError("--base-url needs --model")
        if not o["base_url"]:
            given = [f"--{f.replace('_', '-')}" for f in GENERATION_FLAGS if o[f]]
            given += [flag for flag, key in (("--model", "model"), ("--api-key-env", "api_key_env")) if o[key]]
            if given:
                where = "--endpoint uses the stored endpoint's settings" if o["endpoint"] else "a built-in model"
                raise CommandError(f"{', '.join(given)}: not with {'--endpoint' if o['endpoint'] else '--builtin'} "
                                   f"({where}; edit the endpoint, or use --base-url)")
        methods = [m.strip() for m in o["method"].split(",") if m.strip()]
        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            raise CommandError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
        settings = self._settings(o)
        try:
            if o["endpoint"]:
                endpoint = services.endpoint_for_cli(name=o["endpoint"], concurrency=o["concurrency"])
                self._preflight(o, endpoint.base_url, endpoint.model, endpoint.api_key_env, endpoint.timeout_s,
                                builtin=endpoint.is_builtin)
            else:
                self._preflight(o, o["base_url"] or "", o["model"] or "", o["api_key_env"],
                                settings.get("timeout_s") or 120.0, builtin=bool(o["builtin"]))
                endpoint = services.endpoint_for_cli(base_url=o["base_url"] or "", model=o["model"] or "",
                                                     api_key_env=o["api_key_env"], builtin=o["builtin"] or "",
                                                     concurrency=o["concurrency"], settings=settings)
        except REFUSED as exc:
            raise CommandError(error_text(exc)) from exc
        option_order = self._option_order(o)
        in_process = o["wait"] and (o["in_process"] or not workers_available())
        failures = []
        for number, method in enumerate(methods):
            try:
                run = services.run_launch(
                    endpoint=endpoint, method=method, split=o["split"], limit=o["limit"],
                    seed=42 if o["seed"] is None else o["seed"],
                    samples=o["samples"], k=o["k"], chunk_size=o["chunk_size"],
                    option_order=option_order,
                    enqueue=not in_process, note="evaluate command",
                )
            except REFUSED as exc:
                raise CommandError(error_text(exc)) from exc
            failure = self._complete(run, o, in_process=in_process)
            if failure:
                failures.append(failure)
                if number + 1 < len(methods):
                    failures.append(f"not launched: {', '.join(methods[number + 1:])}")
                break
        if failures:
            raise CommandError("; ".join(failures))

    def _complete(self, run: Run, o: dict, *, in_process: bool, **shown) -> str:
        """After a launch or a refresh: compute the run here (``in_process``) or wait for the workers (--wait), print
        its JSON line (with ``shown`` first); returns why the command fails ("" if it does not)."""
        progress = o["wait"] and not o["no_progress"]
        if in_process and run.is_active:
            self.prepare_to_compute(needs_sdk=not run.endpoint.is_builtin)  # as a worker at its start
            stop = self._progress_thread(run) if progress else None
            try:
                services.run_execute_in_process(run=run)
            finally:
                if stop is not None:
                    stop()
        elif o["wait"]:
            self._wait(run, progress)
        run.refresh_from_db()
        if progress:
            self._draw(run, final=True)
        line = self._line(run)
        self.stdout.write(json.dumps({**shown, **{key: value for key, value in line.items() if key != "record"}}))
        if not o["wait"]:
            return ""
        self.stderr.write(f"run {run.pk} {run.method}: {run_record_text(line['record'])}")
        return self._failure(run, line)

    def _refresh(self, o: dict) -> None:
        """--refresh RUN: ``services.run_refresh`` (the run page's and the API's), then as after a launch."""
        parser = self.create_parser("manage.py", "evaluate")
        given = [f"--{dest.replace('_', '-')}" for dest in LAUNCH_FLAGS if o[dest] != parser.get_default(dest)]
        if given:
            raise CommandError(f"{', '.join(given)}: not with --refresh (a refresh asks again as the run asked: its "
                               f"own method, endpoint, items and settings)")
        run = Run.objects.filter(pk=o["refresh"]).first()
        if run is None:
            raise CommandError(f"no run {o['refresh']}: nothing was refreshed")
        in_process = o["wait"] and (o["in_process"] or not workers_available())
        try:
            with transaction.atomic():  # the items counted are the ones queued: no worker starts before the commit
                run, superseded = services.run_refresh(run=run, enqueue=not in_process)
                asked = len(services.missing_item_ids(run)) if run.is_active else 0
        except REFUSED as exc:
            raise CommandError(f"run {run.pk} was not refreshed: {error_text(exc)}") from exc
        self.stderr.write(f"run {run.pk} {run.method}: {superseded} stale row(s) kept as superseded, {asked} item(s) "
                          f"asked again" + ("" if not asked else ", computing here" if in_process else ", queued"))
        failure = self._complete(run, o, in_process=in_process, superseded=superseded, asked_again=asked)
        if failure:
            raise CommandError(failure)

    @staticmethod
    def _settings(o: dict) -> dict:
        """The endpoint settings of --base-url: Table 9 (with --table9) under the explicit flags."""
        settings: dict = {}
        if o["table9"]:
            settings.update(TABLE9_PRESET)
            if not preflight.needs_key(o["base_url"] or ""):  # hosted APIs such as OpenAI's refuse top_k
                settings["extra_params"] = dict(TABLE9_EXTRA)
        for flag in ("max_tokens", "temperature", "top_p"):
            if o[flag] is not None:
                settings[flag] = o[flag]
        if o["seed"] is not None:
            settings["seed"] = o["seed"]
        if o["timeout"] is not None:
            settings["timeout_s"] = o["timeout"]
        return settings

    def _preflight(self, o: dict, base_url: str, model: str, api_key_env: str, timeout_s: float, *,
                   builtin: bool) -> None:
        """Check the endpoint before any run: refuse with the reason, print the warnings."""
        if builtin:
            return
        if o["no_preflight"]:
            try:
                _, warnings = preflight.key_check(base_url=base_url, api_key_env=api_key_env)
            except preflight.PreflightRefused as exc:
                raise CommandError(f"{exc.message}; no run was started") from exc
        else:
            try:
                warnings = preflight.check_endpoint(base_url=base_url, model=model, api_key_env=api_key_env,
                                                    timeout_s=min(timeout_s, preflight.PREFLIGHT_TIMEOUT_S),
                                                    policy=destination_policy()).warnings
            except preflight.PreflightRefused as exc:
                raise CommandError(f"preflight refused the endpoint: {exc.message}; no run was started") from exc
        for warning in warnings:
            self.stderr.write(f"warning: {warning}")

    @staticmethod
    def _failure(run: Run, line: dict) -> str:
        """Why this run makes the command fail ("" if it does not): it failed, or every row is an error."""
        record = line["record"]
        if run.status == RunStatus.FAILED:
            return f"run {run.pk} ({run.method}) failed: {run.failure_reason or 'no reason recorded'}"
        if record["rows"] and record["errors"] >= record["rows"]:
            common = record["commonest_error"] or {}
            return f"run {run.pk} ({run.method}): every row is an error; commonest: {common.get('message', '?')}"
        return ""

    @staticmethod
    def _option_order(o: dict) -> str:
        if o["permute_options"]:
            if o["option_order"] not in (None, OptionOrder.PERMUTED):
                raise CommandError(f"--permute-options means --option-order permuted, not {o['option_order']}")
            return OptionOrder.PERMUTED
        return o["option_order"] or OptionOrder.ORIGINAL

    def _line(self, run: Run) -> dict:
        full = selectors.run_summary(run=run)
        summary = full.as_json()
        keys = ("run", "method", "n", "accuracy", "keyinfo", "parse_failures", "errors", "wall_s", "status",
                "accuracy_ci95", "first_option_baseline", "tokens_in", "tokens_out", "cost", "prompt_version",
                "stale_rows", "n_fresh", "accuracy_fresh", "accuracy_fresh_ci95")
        line = {key: summary[key] for key in keys}
        line["correct"] = full.metrics.correct
        line["option_order"] = run.option_order
        record = run_record_counts(run=run)
        line.update({key: record[key] for key in ("truncated", "cached", "tokens_spent_in", "tokens_spent_out",
                                                  "cost_spent",
                                                  "abandoned_requests", "commonest_error", "error_classes")})
        line.update(status=run.status, failure_reason=run.failure_reason, endpoint=run.endpoint.name, params=run.params)
        line["record"] = record
        circular = analysis.run_circular_accuracy(run=run)
        if circular is not None:  # "accuracy" above is the plain one, over every rotation's row
            line.update(rotations=circular.rotations, circular_accuracy=circular.accuracy, circular_n=circular.n,
                        circular_correct=circular.correct, circular_incomplete=circular.incomplete)
        return line

    def _draw(self, run: Run, final: bool = False) -> None:
        p = selectors.run_progress(run=run)
        width = 30
        filled = int(width * p.percent / 100)
        sys.stderr.write(f"\rrun {run.pk} {run.method:<30} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{p.resolved}/{p.total} errors {p.errors} {run.status}" + ("\n" if final else ""))
        sys.stderr.flush()

    def _progress_thread(self, run: Run):
        """Draw the progress bar every half second while the run computes in this process; returns a stopper."""
        import threading

        from django.db import connection

        stopped = threading.Event()

        def loop():
            try:
                while not stopped.wait(0.5):
                    self._draw(run)
            finally:
                connection.close()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()

        def stop():
            stopped.set()
            thread.join()

        return stop

    def _wait(self, run: Run, progress: bool) -> None:
        while True:
            run.refresh_from_db(fields=["status"])
            if progress:
                self._draw(run)
            if not run.is_active:
                return
            time.sleep(0.1)  # one row read: cheap, and the run is seen finished within 0.1 s
