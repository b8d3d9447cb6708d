"""Drive a running server with simulated participants over real HTTP (rehearsal and load tests)."""
import json
import threading
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from studies.management.bots import run_bots, summarize
from studies.models import ParticipantLease, Study


class DatabaseOracle:
    """The correct option of an attempt's question, read from the database (never from the page).

    One query per attempt (all its positions at once); the thread's connection goes back at once, so that the
    bots' lookups never wait for one another's connections.
    """

    def __init__(self):
        self._answers: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()

    def __call__(self, token: str, position: int) -> int | None:
        with self._lock:
            known = self._answers.get(token)
        if known is None or position not in known:
            try:
                known = dict(ParticipantLease.objects.filter(attempt__token=token)
                             .values_list("position", "item__answer_index"))
            finally:
                connection.close()
            with self._lock:
                self._answers[token] = known
        return known.get(position)


def close_thread_connection() -> None:
    """A bot thread is done: its database connection (if it opened one) goes back to the pool."""
    connection.close()


def size_database_pool(concurrency: int) -> int | None:
    """Room in the connection pool for every bot thread at once plus this one; the pool's size (None: no pool).

    Django's pool holds DATABASE_POOL_MAX connections (10 by default): with more bots than that, the rest
    waited for a connection until they failed, leaving their attempts holding items until the time limit.
    """
    pool = getattr(connection, "pool", None)
    if pool is None:
        return None
    wanted = concurrency + 1
    if pool.max_size < wanted:
        pool.resize(pool.min_size, wanted)
    return pool.max_size


class Command(BaseCommand):
    help = ("Run N study bots (join, consent, start, answer with highlights, finish) against a running server. "
            "Bots that end without finishing return their attempts (unless --keep-unfinished); the summary lists them.")

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
        parser.add_argument("--keep-unfinished", action="store_true",
                            help="Leave unfinished attempts running (dropouts: their items come back at the deadline) "
                                 "instead of returning them.")
        parser.add_argument("--think", type=float, nargs=2, metavar=("MIN", "MAX"), default=None,
                            help="Seconds each bot waits (uniform random, seeded) before each answer: reading time.")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args, **opts):
        if opts["participants"] < 1 or opts["concurrency"] < 1:
            raise CommandError("--participants and --concurrency must be at least 1.")
        if opts["think"] and not 0 <= opts["think"][0] <= opts["think"][1]:
            raise CommandError("--think needs 0 <= MIN <= MAX.")
        if opts["accuracy"] is not None and not 0 <= opts["accuracy"] <= 1:
            raise CommandError("--accuracy must be between 0 and 1.")
        concurrency = min(opts["concurrency"], opts["participants"])
        pool_size = size_database_pool(concurrency)
        if not Study.objects.filter(slug=opts["study"]).exists():
            raise CommandError(f"No study {opts['study']!r} in this database.")
        connection.close()
        cpu_began, wall_began = time.process_time(), time.perf_counter()
        results = run_bots(
            opts["base_url"], opts["study"], opts["participants"], concurrency=concurrency,
            accuracy=opts["accuracy"], oracle=DatabaseOracle() if opts["accuracy"] is not None else None,
            seed=opts["seed"], id_prefix=opts["id_prefix"], stop_after=opts["stop_after"],
            think=tuple(opts["think"]) if opts["think"] else None,
            release_unfinished=not opts["keep_unfinished"], on_bot_done=close_thread_connection,
        )
        summary = summarize(results)
        summary["database_pool"] = pool_size
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
            unfinished = summary["unfinished"]
            kept = len(unfinished) - summary["released"]
            self.stdout.write(f"unfinished: {len(unfinished)} attempts, {summary['released']} returned, "
                              f"{kept} still running" + (" (--keep-unfinished)" if opts["keep_unfinished"] else ""))
            for row in unfinished:
                self.stdout.write(f"  {row['participant_id']}: {row['outcome']} after {row['answered']} answers, "
                                  f"{'returned' if row['released'] else 'still running'}"
                                  + (f" ({row['message']})" if row["message"] else ""))
            for line in summary["errors"]:
                self.stderr.write(line)
