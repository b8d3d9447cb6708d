"""Helpers of the judge's tests: the `judge` command's JSON lines."""
import io
import json

from django.core.management import call_command


def judge(*args: str) -> list[dict]:
    """Run the `judge` management command; its output, one JSON object a line."""
    out = io.StringIO()
    call_command("judge", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]
