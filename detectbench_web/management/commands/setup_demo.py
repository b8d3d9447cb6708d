"""`python manage.py setup_demo`: everything `make run` sets up, in one process, doing only what is missing.

Migrations, the sample data (items edited in the app kept), the demo accounts, the demo study (15 questions per
participant, a quota that divides), the built-in baseline and judge runs, collected static files: each part is
skipped when it is already there (detectbench_web.demo), so a second run takes about a second and changes nothing.
`--runs worker` (as scripts/run.sh calls it) leaves the model and judge runs to the Celery worker, so that the
web server is up sooner; by default they run here, before the command returns.
"""
from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from detectbench_web import demo


class Command(BaseCommand):
    help = ("Set up what `make run` needs, doing only what is missing: migrations, sample data (edited items kept), "
            "demo accounts, the demo study, the built-in baseline and judge runs, collected static files.")
    # The web server started next runs the system checks; this command does not run them first.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--runs", choices=("here", "worker", "none"), default="here",
                            help="The built-in baseline and judge runs: computed in this process (default), handed "
                                 "to the Celery worker (computed once it starts), or not at all")
        parser.add_argument("--no-static", action="store_true",
                            help="Do not collect static files (the test settings serve them from the apps)")

    def handle(self, *args, runs: str = "here", no_static: bool = False, **options):
        started = time.monotonic()
        hashes = demo.hash_passwords(demo.missing_accounts())  # in threads, while the migrations run
        self._step("database", demo.migrate)
        self._step("sample data", demo.sample_data)
        self._step("demo accounts", lambda: demo.accounts(hashes))
        self._step("demo study", self._demo_study)
        if runs == "here":
            self._step("baseline runs", demo.baseline_runs)
            self._step("judge runs", demo.judge_runs)
        elif runs == "worker":
            self._step("model and judge runs", self._hand_to_worker)
        if not no_static:
            self._step("static files", demo.collect_static)
        self.stdout.write(f"setup done in {time.monotonic() - started:.1f} s")

    def _step(self, name: str, step) -> None:
        started = time.monotonic()
        what = step()
        elapsed = time.monotonic() - started
        self.stdout.write(f"  {name}: {what}" + (f" ({elapsed:.1f} s)" if elapsed >= 0.1 else ""))

    def _demo_study(self) -> str:
        done, problems = demo.demo_study()
        for problem in problems:
            self.stderr.write(f"  warning: demo study /s/{demo.DEMO_STUDY_SLUG}/: {problem}")
        return done

    @staticmethod
    def _hand_to_worker() -> str:
        baselines, judge_runs = demo.missing_baselines(), demo.missing_judge_runs()
        runs, judge_runs_cut_short = demo.unfinished_runs()
        unfinished = [f"run {run.pk}" for run in runs] + [f"judge run {jr.pk}" for jr in judge_runs_cut_short]
        if not baselines and not judge_runs and not unfinished:
            return "all present"
        from detectbench_web.tasks import setup_demo_runs

        setup_demo_runs.delay()
        todo = [f"{model} {method}" for model, methods in baselines.items() for method in methods]
        todo += [f"judge {task}" for task in judge_runs] + [f"{what} resumed" for what in unfinished]
        return f"the worker computes them once it starts ({', '.join(todo)})"
