"""One request loop for every run: model runs and judge runs both stream through ``execution.streaming``.

Discovered from the code, not listed: any module of the project that builds an ``Engine`` must hand it to
``stream_jobs``, and no module but ``streaming`` calls ``Engine.run`` (a second loop is how the judge's copy
once drifted: no breaker, no infrastructure errors, a cache read that dropped ``finish_reason``).
"""
from __future__ import annotations

import ast
import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evaluation.execution import streaming
from evaluation.model_calls.clients import ModelClient
from evaluation.model_calls.engine import Engine, Job
from evaluation.prompting.methods import Completion, get_method
from evaluation.prompting.prompts import ItemView, present

ROOT = Path(__file__).resolve().parents[3]
APPS = ("annotation", "studies", "evaluation", "foundation", "detectbench_web")


def _modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), filename=str(path))


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            yield func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def test_only_the_streaming_module_runs_an_engine():
    runners = []
    for path, tree in _modules():
        source = path.read_text()
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run"
                    and "engine" in ast.unparse(node.func.value).lower()):
                runners.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(source, node)[:60]}")
    assert [r.split(":")[0] for r in runners] == ["evaluation/execution/streaming.py"], runners


def test_every_module_that_builds_an_engine_streams_it():
    builders = {str(path.relative_to(ROOT)): set(_calls(tree)) for path, tree in _modules()}
    building = {name for name, calls in builders.items() if "Engine" in calls and not name.endswith("engine.py")}
    assert building >= {"evaluation/execution/chunks.py", "evaluation/execution/judge.py"}, building
    assert {name for name in building if "stream_jobs" not in builders[name]} == set()


def test_no_run_reads_on_the_thread_it_writes_on():
    """Discovered from the code: every module that hands a thread to ``stream_jobs`` as ``db`` (its writes) runs
    nothing else there: its reads (planning, cache lookups) go to a ``reading_thread``. On the writes' thread a read
    waited behind each write and the requests stalled (found in model runs; the judge's cache reads had it too)."""
    streaming_modules = []
    for path, tree in _modules():
        name = str(path.relative_to(ROOT))
        if name == "evaluation/execution/streaming.py":
            continue
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
        writes = {ast.unparse(k.value) for c in calls if ast.unparse(c.func).endswith("stream_jobs")
                  for k in c.keywords if k.arg == "db"}
        if not writes:
            continue
        streaming_modules.append(name)
        elsewhere = [f"{name}:{c.lineno}: {ast.unparse(c)[:70]}" for c in calls
                     if ast.unparse(c.func).endswith("run_in_executor") and c.args
                     and ast.unparse(c.args[0]) in writes]
        assert not elsewhere, elsewhere
        assert "reading_thread" in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}, name
    assert set(streaming_modules) >= {"evaluation/execution/chunks.py", "evaluation/execution/judge.py"}


def test_a_judge_run_builds_its_client_where_a_model_run_does():
    """The judge's client comes from ``chunks.make_client`` (same limiter, retries, breaker, key handling)."""
    judge = (ROOT / "evaluation/execution/judge.py").read_text()
    assert "make_client(" in judge and "LogprobChatClient(" not in judge


# --- When the rows are written: at once when answers are few, batched (writes spaced) when they come fast ---


class _TimedModel(ModelClient):
    """The model API's stand-in, in process: answers "1" after ``delay_s`` (sample n after ``delays[n]``, if given),
    noting when each answer came and when it was closed."""

    def __init__(self, delay_s: float = 0.0, delays: list[float] | None = None):
        self.delay_s, self.delays, self.answered, self.closed = delay_s, delays, {}, []

    async def complete(self, messages, *, sample_key):
        sample = sample_key.split(":")[0]
        await asyncio.sleep(self.delay_s if self.delays is None else self.delays[int(sample)])
        self.answered[sample] = time.monotonic()
        return Completion(text="### Answer:\n1", tokens_in=1, tokens_out=1, finish_reason="stop")

    async def close(self):
        self.closed.append(time.monotonic())


def _shown():
    """One small item, shown as the engine's jobs show it."""
    view = ItemView(id=1, context="A clue.", question="Who?", options=("Ann", "Bo"), answer_index=0)
    return present(view, seed=0, permute=False)


def _stream(delay_s: float, jobs: int, concurrency: int):
    shown = _shown()
    model = _TimedModel(delay_s)
    engine = Engine(method=get_method("naive"), client=model, concurrency=concurrency, ramp_spacing_s=0.0)
    writes, lock = [], threading.Lock()

    def write(batch):
        with lock:
            writes.append((time.monotonic(), [r.job.sample_index for r in batch]))

    async def main():
        return await streaming.stream_jobs(
            engine=engine, jobs=[Job(item_id=1, sample_index=n, shown=shown) for n in range(jobs)],
            db=ThreadPoolExecutor(max_workers=1), write=write, is_cancelled=lambda: False,
            close_client=model.close)

    outcome = asyncio.run(main())
    written = sorted(n for _, batch in writes for n in batch)
    assert written == list(range(jobs)) and outcome.written == jobs
    return model, writes


def test_answers_that_come_fast_are_written_in_spaced_batches():
    _, writes = _stream(delay_s=0.002, jobs=8000, concurrency=32)
    starts = [at for at, _ in writes[:-1]]  # the last write, of what is left at the end, is not held back
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    # Timed where the writer thread runs each write: one taken up late (a loaded machine) shortens the next gap by that
    # much. Unspaced writes of answers coming every few milliseconds would be milliseconds apart: the typical gap is
    # the spacing, and none is under a quarter of it.
    assert len(gaps) >= 4 and sorted(gaps)[len(gaps) // 2] >= streaming.WRITE_SPACING_S * 0.8, gaps
    assert min(gaps) >= streaming.WRITE_SPACING_S / 4, gaps
    assert max(len(batch) for _, batch in writes) > 100  # batched, not a few rows a write


@pytest.mark.parametrize("delay_s", [0.12, streaming.FLUSH_EVERY_S + 0.01])
def test_an_answer_that_comes_alone_is_written_at_once(delay_s):
    """A slow endpoint: each answer is written as it comes, not held back (a killed worker loses only what is in
    flight); also one that comes just after the writer woke with nothing to write (the spacing runs from the last
    write, not from that wake-up)."""
    model, writes = _stream(delay_s=delay_s, jobs=4, concurrency=1)
    for at, batch in writes:
        for n in batch:
            # At once is under a millisecond here; the spacing counted from an idle wake-up held one 40 ms.
            assert at - model.answered[str(n)] < 0.03, (n, at - model.answered[str(n)])
    assert len(writes) == 4


def _stream_events(model: _TimedModel, events: list, *, fail_write_of: int | None = None):
    """Stream one job per delay of ``model`` (all at once), noting in ``events`` what runs on the writing thread."""
    shown = _shown()
    engine = Engine(method=get_method("naive"), client=model, concurrency=len(model.delays), ramp_spacing_s=0.0)

    def write(batch):
        samples = [r.job.sample_index for r in batch]
        if fail_write_of in samples:
            raise ConnectionError("the database went away")
        events.append(("write", time.monotonic(), samples, threading.current_thread().name))

    def after():
        events.append(("after", time.monotonic(), [], threading.current_thread().name))

    async def main():
        return await streaming.stream_jobs(
            engine=engine, jobs=[Job(item_id=1, sample_index=n, shown=shown) for n in range(len(model.delays))],
            db=ThreadPoolExecutor(max_workers=1, thread_name_prefix="writes"), write=write,
            is_cancelled=lambda: False, close_client=model.close, after_last_write=after)

    return asyncio.run(main())


def test_the_last_answers_are_written_as_the_stream_ends_not_after_the_spacing():
    """The second answer comes while the writer waits out the spacing after the first write: the stream has ended,
    so it is written at once (a run's end was held up to ``WRITE_SPACING_S`` here)."""
    model, events = _TimedModel(delays=[0.001, 0.01]), []
    outcome = _stream_events(model, events)
    writes = [event for event in events if event[0] == "write"]
    assert outcome.written == 2 and [event[2] for event in writes] == [[0], [1]]
    assert writes[1][1] - model.answered["1"] < streaming.WRITE_SPACING_S / 2, writes[1][1] - model.answered["1"]


def test_after_the_last_write_runs_on_the_writing_thread_once_the_client_is_closed():
    """A run is seen finished only when its client is closed (its limiter slots given back for the next run)."""
    model, events = _TimedModel(delays=[0.001, 0.002, 0.03]), []
    outcome = _stream_events(model, events)
    assert outcome.written == 3 and [event[0] for event in events][-1] == "after"
    assert all(event[3].startswith("writes") for event in events)
    assert len(model.closed) == 1 and model.closed[0] <= events[-1][1]


def test_a_failed_last_write_closes_the_client_and_skips_the_hook():
    model, events = _TimedModel(delays=[0.001, 0.01]), []
    with pytest.raises(ConnectionError):
        _stream_events(model, events, fail_write_of=1)
    assert [event[0] for event in events] == ["write"] and len(model.closed) == 1
