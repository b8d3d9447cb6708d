"""`python manage.py evaluate`: launch runs of one or more methods and print one JSON line per run."""
from __future__ import annotations

import argparse
import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from detectbench_web.error_mapping import REFUSED, error_text

from evaluation import analysis, selectors, services
from evaluation.baselines import BUILTIN_MODELS
from evaluation.methods import METHODS
from evaluation.models import OptionOrder, Run


def workers_available(timeout: float = 1.0) -> bool:
    """True when a Celery worker answers a ping (never with the embedded filesystem broker)."""
    from django.conf import settings

    from detectbench_web.celery import app

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


class Command(BaseCommand):
    help = ("Evaluate a model (OpenAI-compatible endpoint or built-in) with one or more prompting methods; "
            "prints one JSON line per run.")

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
        source.add_argument("--builtin", choices=BUILTIN_MODELS, help="A built-in offline model")
        parser.add_argument("--model", help="Model name at the endpoint (with --base-url)")
        parser.add_argument("--api-key-env", default="", help="NAME of the environment variable holding the API key")
        parser.add_argument("--method", default="naive", help=f"Comma-separated methods: {', '.join(METHODS)}")
        parser.add_argument("--split", default="test")
        parser.add_argument("--limit", type=positive_int)
        parser.add_argument("--concurrency", type=positive_int, help="The endpoint's limit of requests in flight (all workers)")
        parser.add_argument("--seed", type=int, default=42)
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
        if o["base_url"] and not o["model"]:
            raise CommandError("--base-url needs --model")
        methods = [m.strip() for m in o["method"].split(",") if m.strip()]
        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            raise CommandError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
        try:
            endpoint = services.endpoint_for_cli(base_url=o["base_url"] or "", model=o["model"] or "",
                                                 api_key_env=o["api_key_env"], builtin=o["builtin"] or "",
                                                 concurrency=o["concurrency"])
        except REFUSED as exc:
            raise CommandError(error_text(exc)) from exc
        option_order = self._option_order(o)
        in_process = o["wait"] and (o["in_process"] or not workers_available())
        progress = o["wait"] and not o["no_progress"]
        for method in methods:
            try:
                run = services.run_launch(
                    endpoint=endpoint, method=method, split=o["split"], limit=o["limit"], seed=o["seed"],
                    samples=o["samples"], k=o["k"], chunk_size=o["chunk_size"],
                    option_order=option_order,
                    enqueue=not in_process, note="evaluate command",
                )
            except REFUSED as exc:
                raise CommandError(error_text(exc)) from exc
            if in_process:
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
            self.stdout.write(json.dumps(self._line(run)))

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
                "accuracy_ci95", "first_option_baseline", "tokens_in", "tokens_out", "cost", "prompt_version")
        line = {key: summary[key] for key in keys}
        line["correct"] = full.metrics.correct
        line["option_order"] = run.option_order
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
                         f"{p.resolved}/{p.total} errors {p.errors}" + ("\n" if final else ""))
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
            time.sleep(0.5)
