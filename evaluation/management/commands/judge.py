"""`python manage.py judge`: run a judge configuration over a free-text run or a split; one JSON line per judge run."""
from __future__ import annotations

import json
import time

from django.core.management.base import CommandError

from evaluation.judge.specs import CLUE_GRAPH, SCREENING
from evaluation.management.commands.evaluate import positive_int, workers_available
from evaluation.management.computing import ComputingCommand
from evaluation.models import Run
from evaluation.selectors import judge as selectors
from evaluation.services import judge as services
from foundation.errors import ServiceError


class Command(ComputingCommand):
    help = ("Judge the answers of free-text runs (--run) or screen / draft clue graphs for the items of a split "
            "(--split --task); prints one JSON line per judge run.")

    def add_arguments(self, parser):
        parser.add_argument("--config", required=True, help='A judge configuration name ("builtin": the offline judge)')
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--run", type=positive_int, action="append", help="A free-text run id (repeatable)")
        target.add_argument("--split", help="The items of this split (with --task)")
        parser.add_argument("--task", choices=[SCREENING, CLUE_GRAPH], help="With --split: screening or clue-graph")
        parser.add_argument("--limit", type=positive_int, help="At most this many targets")
        parser.add_argument("--wait", action="store_true",
                            help="Wait for the labels: through Celery when a worker answers, else in this process")
        parser.add_argument("--in-process", action="store_true", help="With --wait: always compute in this process")

    def handle(self, *args, **o):
        if o["split"] and not o["task"]:
            raise CommandError("--split needs --task screening or --task clue-graph")
        if o["run"] and o["task"]:
            raise CommandError("--run judges free-text answers; --task goes with --split")
        in_process = o["wait"] and (o["in_process"] or not workers_available())
        try:
            config = services.judge_config_get(name=o["config"])
            launches = ([{"run": self._run(run_id)} for run_id in o["run"]] if o["run"]
                        else [{"split": o["split"], "task": o["task"]}])
            for launch in launches:
                judge_run = services.judge_run_launch(config=config, limit=o["limit"], enqueue=not in_process,
                                                      note="judge command", **launch)
                if in_process:
                    self.prepare_to_compute(needs_sdk=not config.is_builtin)  # as a worker at its start
                    judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
                elif o["wait"]:
                    judge_run = self._wait(judge_run)
                self.stdout.write(json.dumps(selectors.judge_run_line(judge_run=judge_run)))
        except ServiceError as exc:
            raise CommandError(exc.message) from exc

    def _run(self, run_id: int) -> Run:
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"no run {run_id}")
        return run

    def _wait(self, judge_run):
        while True:
            judge_run.refresh_from_db()
            if not judge_run.is_active:
                return judge_run
            time.sleep(0.5)
