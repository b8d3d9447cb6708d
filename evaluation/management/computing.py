"""A run computed by a management command in a process of its own starts as a Celery worker starts.

A worker imports the model SDK and freezes what it loaded out of the garbage collector's walks before its pool forks
(evaluation.tasks.import_model_sdk, foundation.process_start): a full collection no longer stops a run's event loop
for tens of milliseconds, and the SDK's import is not on the run's clock. `manage.py evaluate --wait` (or `judge
--wait`) computing in its own process does the same before the first request. The same command called inside a
process that lives on (`make run`'s demo runs in a Celery worker, a test) does not: that process froze what it loaded
at its own start, and objects of a task in progress frozen now would never be collected.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand

from foundation.process_start import freeze_startup_objects


class ComputingCommand(BaseCommand):
    #: Set when the command runs from the command line (manage.py), in a process that ends with it.
    own_process = False

    def run_from_argv(self, argv):
        self.own_process = True
        return super().run_from_argv(argv)

    def prepare_to_compute(self, *, needs_sdk: bool) -> None:
        """Before computing here: the SDK imported (unless every call is to a built-in model) and what this process
        loaded frozen, as a worker does at its start; nothing when the command was called inside another process."""
        if not self.own_process:
            return
        if needs_sdk:
            from evaluation.tasks import import_model_sdk

            import_model_sdk()  # the worker's own start: the SDK, then the freeze
        else:
            freeze_startup_objects()
