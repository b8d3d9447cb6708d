#!/usr/bin/env python
"""Django's command-line utility for DetectBench Web."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "detectbench_web.settings.base")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`export_items | head`): stop quietly, as a shell tool does, without a traceback;
        # what is left in the buffer goes nowhere (Python's documented recipe for SIGPIPE).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
