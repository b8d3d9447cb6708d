"""Drive a running server with simulated participants over real HTTP (rehearsal and load tests)."""
import json
import time

from django.core.management.base import BaseCommand, CommandError

from studies.bots import run_bots, summarize
from studies.models import ParticipantLease, Study


def database_oracle(token: str, position: int) -> int | None:
    """The correct option of an attempt's question, read from the database (never from the page)."""
    lease = ParticipantLease.objects.filter(attempt__token=token, position=position).select_related("item").first()
    return lease.item.answer_index if lease else None


class Command(BaseCommand):
    help = "Run N study bots (join, consent, start, answer with highlights, finish) against a running server."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="Study slug.")
        parser.add_argument("--participants", type=int, required=True)
        parser.add_argument("--concurrency", type=int, default=10)
        parser.add_argument("--accuracy", type=float, default=None,
                            help="Probability of answering correctly (needs database access); default random.")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--id-prefix", default="bot")
        parser.add_argument("--stop-after", type=int, default=None, help="Each bot leaves after this many answers.")
        parser.add_argument("--think", type=float, nargs=2, metavar=("MIN", "MAX"), default=None,
                            help="Seconds each bot waits (uniform random, seeded) before each answer: reading time.")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args, **opts):
        if not Study.objects.filter(slug=opts["study"]).exists():
            raise CommandError(f"No study {opts['study']!r} in this database.")
        if opts["think"] and not 0 <= opts["think"][0] <= opts["think"][1]:
            raise CommandError("--think needs 0 <= MIN <= MAX.")
        if opts["accuracy"] is not None and not 0 <= opts["accuracy"] <= 1:
            raise CommandError("--accuracy must be between 0 and 1.")
        cpu_began, wall_began = time.process_time(), time.perf_counter()
        results = run_bots(
            opts["base_url"], opts["study"], opts["participants"], concurrency=opts["concurrency"],
            accuracy=opts["accuracy"], oracle=database_oracle if opts["accuracy"] is not None else None,
            seed=opts["seed"], id_prefix=opts["id_prefix"], stop_after=opts["stop_after"],
            think=tuple(opts["think"]) if opts["think"] else None,
        )
        summary = summarize(results)
        # The bots share the machine with the server: say how much CPU they used themselves.
        summary["client_cpu_seconds"] = round(time.process_time() - cpu_began, 2)
        summary["wall_seconds"] = round(time.perf_counter() - wall_began, 2)
        summary["errors"] = [f"{r.participant_id}: {r.message}" for r in results if r.outcome == "error"][:10]
        if opts["json"]:
            self.stdout.write(json.dumps(summary, indent=1))
        else:
            self.stdout.write(f"outcomes: {summary['outcomes']}")
            for kind, figures in sorted(summary["latency"].items()):
                self.stdout.write(f"{kind:>10}: n={figures['n']} p50={figures['p50_ms']} ms p95={figures['p95_ms']} ms "
                                  f"max={figures['max_ms']} ms")
            for line in summary["errors"]:
                self.stderr.write(line)
