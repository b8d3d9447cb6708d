"""One request loop for every run: model runs and judge runs both stream through ``execution.streaming``.

Discovered from the code, not listed: any module of the project that builds an ``Engine`` must hand it to
``stream_jobs``, and no module but ``streaming`` calls ``Engine.run`` (a second loop is how the judge's copy
once drifted: no breaker, no infrastructure errors, a cache read that dropped ``finish_reason``).
"""
from __future__ import annotations

import ast
from pathlib import Path

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


def test_a_judge_run_builds_its_client_where_a_model_run_does():
    """The judge's client comes from ``chunks.make_client`` (same limiter, retries, breaker, key handling)."""
    judge = (ROOT / "evaluation/execution/judge.py").read_text()
    assert "make_client(" in judge and "LogprobChatClient(" not in judge
