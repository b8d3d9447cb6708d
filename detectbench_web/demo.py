"""What `make run` sets up (`manage.py setup_demo`), each part doing only what is missing.

Every part returns one line saying what it did. The parts call the management commands one would type (with the
same arguments), so what they build is what those build: migrations not yet applied; the sample puzzles
(load_sample_data: items edited in the app are kept); the missing demo accounts (an existing one is never reset);
the demo study when there is none; the built-in baseline runs and the judge runs the evaluation and review pages
read; collected static files when the sources changed since the last collection.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

#: The demo study, as `create_study` arguments: 15 questions per participant (as in the paper) over 20 of the 24
#: sample test items, 3 raters each: 60 answers make exactly 4 complete attempts, so every setup check passes.
DEMO_STUDY_SLUG = "demo"
DEMO_STUDY_ARGS = (
    "--slug", DEMO_STUDY_SLUG, "--title", "Demo study", "--split", "test", "--sample", "20", "--seed", "0",
    "--per-participant", "15", "--raters", "3", "--time-limit", "1800", "--status", "open",
    "--completion-code", "DEMO2026", "--timeout-code", "DEMO2026-TIMEOUT",
)
#: The built-in offline models, each run once with these methods over the sample test items.
BASELINE_MODELS = ("first-option", "lexical", "random")
BASELINE_METHODS = ("naive", "detective-thinking")
EVALUATE_ARGS = ("--split", "test", "--in-process", "--wait", "--no-progress")
#: A free-text run judged by the built-in judge, and the sample test items screened by it: the belief-label
#: review queue and the verification screen then have the judge's labels.
FREE_TEXT_MODEL = "lexical"
JUDGE_CONFIG = "builtin"


def quietly(command: str, *args: str) -> str:
    """Run a management command; its output as one line."""
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO())
    return "; ".join(line.strip() for line in out.getvalue().splitlines() if line.strip())


# --- the database --------------------------------------------------------------------------------------------
def migrate() -> str:
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if not plan:
        return "up to date"
    call_command("migrate", "--noinput", verbosity=0)
    return f"{len(plan)} migration{'s' if len(plan) > 1 else ''} applied"


def sample_data() -> str:
    return quietly("load_sample_data")


# --- accounts: the password hashes (about a second of CPU each) are made while the migrations run ---------------
def missing_accounts() -> list[tuple[str, str, str, bool]]:
    """The demo accounts that do not exist yet (all of them before the first migration)."""
    from django.contrib.auth import get_user_model

    from annotation.management.commands.create_demo_accounts import DEMO_ACCOUNTS

    try:
        existing = set(get_user_model().objects.filter(username__in=[a[0] for a in DEMO_ACCOUNTS])
                       .values_list("username", flat=True))
    except DatabaseError:  # no tables yet
        connections[DEFAULT_DB_ALIAS].close()
        existing = set()
    return [account for account in DEMO_ACCOUNTS if account[0] not in existing]


def hash_passwords(accounts) -> dict[str, Future]:
    """Start hashing the accounts' passwords in threads (PBKDF2 releases the GIL): {username: Future(hash)}."""
    from django.contrib.auth.hashers import make_password

    if not accounts:
        return {}
    pool = ThreadPoolExecutor(max_workers=len(accounts), thread_name_prefix="demo-password")
    hashes = {username: pool.submit(make_password, password) for username, password, _, _ in accounts}
    pool.shutdown(wait=False)
    return hashes


def accounts(hashes: dict[str, Future]) -> str:
    """Create the missing demo accounts, as create_demo_accounts does (an existing one is left as it is)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    User = get_user_model()
    created = []
    for username, password, group, is_staff in missing_accounts():
        user = User(username=username, is_staff=is_staff)
        if username in hashes:
            user.password = hashes[username].result()
        else:
            user.set_password(password)
        user.save()
        user.groups.add(Group.objects.get(name=group))
        created.append(f"{username} / {password} ({group})")
    return ("created " + ", ".join(created)) if created else "all present (passwords unchanged)"


# --- the demo study -------------------------------------------------------------------------------------------
def demo_study() -> tuple[str, list[str]]:
    """Create the demo study when there is none. Returns what was done and what its setup checks say (nothing for
    the study this creates; an older or edited one may fail a check, which the person running the demo can act on)."""
    from studies.models import Study
    from studies.setup_checks import setup_warnings, translation_coverage

    study = Study.objects.filter(slug=DEMO_STUDY_SLUG).first()
    if study is None:
        try:
            done = quietly("create_study", *DEMO_STUDY_ARGS)
        except CommandError as error:  # e.g. sample items rejected in the app: the rest of the demo still starts
            return "not created", [str(error)]
        study = Study.objects.get(slug=DEMO_STUDY_SLUG)
    else:
        done = f"kept /s/{study.slug}/ ({study.get_status_display().lower()})"
    problems = [*setup_warnings(study),
                *(f"{coverage.name}: {len(coverage.missing)} items without a translation"
                  for coverage in translation_coverage(study) if not coverage.complete)]
    return done, problems


# --- baseline and judge runs ------------------------------------------------------------------------------------
# The demo computes its runs in one process (this one, or the worker's task), never in chunks: a demo run still
# queued or running when no such process is at work was cut short (Ctrl-C during the first start), and nothing
# else would finish it (the embedded broker has no reconciliation), so the next setup resumes it.
def missing_baselines() -> dict[str, list[str]]:
    """{built-in model: its baseline methods with no run yet}."""
    from evaluation.models import Run

    missing = {}
    for model in BASELINE_MODELS:
        have = set(Run.objects.filter(endpoint__kind="builtin", endpoint__model=model, split="test",
                                      method__in=BASELINE_METHODS).values_list("method", flat=True))
        if [method for method in BASELINE_METHODS if method not in have]:
            missing[model] = [method for method in BASELINE_METHODS if method not in have]
    return missing


def missing_judge_runs() -> list[str]:
    """The judge tasks ("free-text", "screening") of the demo with no judge run yet."""
    from evaluation.models import JudgeRun

    return [task for task, where in (("free-text", {}), ("screening", {"split": "test"}))
            if not JudgeRun.objects.filter(config__name=JUDGE_CONFIG, task=task, **where).exists()]


def unfinished_runs():
    """The demo's model runs and judge runs that were cut short: (runs, judge runs)."""
    from evaluation.models import JudgeRun, Run

    runs = Run.objects.filter(endpoint__kind="builtin", split="test", status__in=("queued", "running"),
                              endpoint__model__in={*BASELINE_MODELS, FREE_TEXT_MODEL},
                              method__in={*BASELINE_METHODS, "free-text"}).order_by("pk")
    judge_runs = JudgeRun.objects.filter(config__name=JUDGE_CONFIG, status__in=("queued", "running")).order_by("pk")
    return list(runs), list(judge_runs)


def runs_missing() -> bool:
    runs, judge_runs = unfinished_runs()
    return bool(missing_baselines() or missing_judge_runs() or runs or judge_runs)


def finish_unfinished() -> list[str]:
    """Resume the demo's runs that were cut short, in this process; what was done."""
    from evaluation.services import judge as judge_services
    from evaluation.services import runs as run_services
    from foundation.errors import ServiceError

    runs, judge_runs = unfinished_runs()
    done = []
    for run in runs:
        run = run_services.run_resume(run=run, enqueue=False)
        if run.is_active:
            run_services.run_execute_in_process(run=run)
        done.append(f"run {run.pk} resumed")
    for judge_run in judge_runs:
        try:
            judge_run = judge_services.judge_run_resume(judge_run=judge_run, enqueue=False)
            judge_services.judge_run_execute_in_process(judge_run=judge_run)
        except ServiceError:  # alive elsewhere: left to it
            continue
        done.append(f"judge run {judge_run.pk} resumed")
    return done


def _evaluate(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("evaluate", *args, stdout=out, stderr=io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def baseline_runs() -> str:
    resumed = finish_unfinished()
    lines = []
    for model, methods in missing_baselines().items():
        lines += _evaluate("--builtin", model, "--method", ",".join(methods), *EVALUATE_ARGS)
    done = resumed + [f"{line['endpoint'].removeprefix('builtin:')} {line['method']} {line['correct']}/{line['n']}"
                      for line in lines]
    return ", ".join(done) if done else "all present"


def judge_runs() -> str:
    from evaluation.models import Run

    done = []
    missing = missing_judge_runs()
    if "free-text" in missing:
        run = (Run.objects.filter(endpoint__kind="builtin", endpoint__model=FREE_TEXT_MODEL, method="free-text",
                                  split="test", status="finished").order_by("pk").last())
        if run is None:
            (line,) = _evaluate("--builtin", FREE_TEXT_MODEL, "--method", "free-text", *EVALUATE_ARGS)
            run = Run.objects.get(pk=line["run"])
        quietly("judge", "--config", JUDGE_CONFIG, "--run", str(run.pk), "--wait", "--in-process")
        done.append(f"free-text run {run.pk} judged")
    if "screening" in missing:
        quietly("judge", "--config", JUDGE_CONFIG, "--split", "test", "--task", "screening", "--wait", "--in-process")
        done.append("test items screened")
    return ", ".join(done) if done else "all present"


def runs_by_one_process() -> str:
    """The baseline and judge runs in this process; a second caller at the same time (on this machine) leaves
    them to the first. Used by the worker's task, which two queued messages could start twice."""
    lock_path = Path(settings.VAR_DIR) / "setup-demo-runs.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "another process is running them"
        return f"baseline runs: {baseline_runs()}; judge runs: {judge_runs()}"


# --- static files -----------------------------------------------------------------------------------------------
def static_fingerprint() -> str:
    """What collectstatic would copy (every finder's files: name, size, modification time), and how it stores them."""
    from django.contrib.staticfiles.finders import get_finders

    digest = hashlib.sha256(settings.STORAGES["staticfiles"]["BACKEND"].encode())
    entries = []
    for finder in get_finders():
        for path, storage in finder.list(["CVS", ".*", "*~"]):
            stat = os.stat(storage.path(path))
            entries.append(f"{getattr(storage, 'prefix', None) or ''}/{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    digest.update("\n".join(sorted(entries)).encode())
    return digest.hexdigest()


def static_stamp() -> Path:
    """The fingerprint of the last collection: beside STATIC_ROOT, not in it (whitenoise serves all that is)."""
    root = Path(settings.STATIC_ROOT)
    return root.with_name(root.name + ".stamp")


def collect_static() -> str:
    root, stamp = Path(settings.STATIC_ROOT), static_stamp()
    fingerprint = static_fingerprint()
    manifest_there = ("Manifest" not in settings.STORAGES["staticfiles"]["BACKEND"]
                      or (root / "staticfiles.json").is_file())
    if root.is_dir() and manifest_there and stamp.is_file() and stamp.read_text().strip() == fingerprint:
        return "up to date"
    root.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    out = io.StringIO()
    call_command("collectstatic", "--noinput", "--clear", stdout=out, verbosity=1)
    stamp.write_text(fingerprint + "\n")
    lines = out.getvalue().strip().splitlines()
    return lines[-1].replace(f" to '{root}'", "") if lines else "collected"
