"""Shared fixtures: real PostgreSQL (pytest-django), real Redis, a real Celery worker, role users."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from hypothesis import settings as hypothesis_settings

REPO_DIR = Path(__file__).resolve().parent.parent


def _find_data_dir() -> Path:
    """The real DetectBench data: $DETECTBENCH_DATA, else ../shared beside the checkout, else /work/shared."""
    if os.environ.get("DETECTBENCH_DATA"):
        return Path(os.environ["DETECTBENCH_DATA"])
    candidates = [REPO_DIR.parent / "shared" / "detectbench" / "v1.3", Path("/work/shared/detectbench/v1.3")]
    return next((c for c in candidates if (c / "test.jsonl").exists()), candidates[0])


DATA_DIR = _find_data_dir()
# The paper's text (prompt tables), beside the data in the shared folder.
PAPER_PATH = DATA_DIR.parent.parent / "paper" / "piecing-together-clues.txt"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}

# In CI the property tests draw the same examples every run (a rare input found by chance would fail one run and not
# the next); elsewhere they explore new inputs each run.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if IN_CI:
    hypothesis_settings.load_profile("ci")

def missing_requirements() -> list[str]:
    """What the suite needs from outside the repository and does not find (data, paper, browser)."""
    missing = []
    if not (DATA_DIR / "test.jsonl").exists():
        missing.append(f"real DetectBench data: {DATA_DIR}/test.jsonl (set DETECTBENCH_DATA)")
    if not PAPER_PATH.exists():
        missing.append(f"the paper's text: {PAPER_PATH}")
    if not CHROMIUM.exists():
        missing.append(f"Debian's chromium: {CHROMIUM} (apt-get install chromium)")
    if shutil.which("pdflatex") is None:
        missing.append("pdflatex, for the LaTeX table export (apt-get install texlive-latex-base texlive-latex-recommended)")
    return missing


def require(condition: bool, what: str) -> None:
    """Skip when something from outside is missing, except in CI (CI=true), where the test fails and says what."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"missing in CI: {what}", pytrace=False)
    pytest.skip(f"missing: {what}")


def pytest_sessionstart(session):
    """In CI a missing data set or browser stops the run at once, loudly, instead of skipping tests."""
    if IN_CI and not session.config.option.collectonly:
        missing = missing_requirements()
        if missing:
            pytest.exit("CI=true and the test suite cannot run completely; missing:\n  - " + "\n  - ".join(missing),
                        returncode=3)


@pytest.fixture(scope="session")
def detectbench_dir() -> Path:
    require((DATA_DIR / "test.jsonl").exists(), f"real DetectBench data at {DATA_DIR} (set DETECTBENCH_DATA)")
    return DATA_DIR


@pytest.fixture(scope="session")
def paper_path() -> Path:
    require(PAPER_PATH.exists(), f"the paper's text at {PAPER_PATH}")
    return PAPER_PATH


def _make_user(django_user_model, username: str, group: str | None, **extra):
    user = django_user_model.objects.create_user(username=username, password="pw-" + username, **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def annotator(db, django_user_model):
    return _make_user(django_user_model, "ann1", "annotators")


@pytest.fixture
def annotator2(db, django_user_model):
    return _make_user(django_user_model, "ann2", "annotators")


@pytest.fixture
def researcher(db, django_user_model):
    return _make_user(django_user_model, "res1", "researchers", is_staff=True)


@pytest.fixture
def plain_user(db, django_user_model):
    """An account with no role (neither annotator nor researcher)."""
    return _make_user(django_user_model, "nobody", None)


@pytest.fixture
def annotator_client(client, annotator):
    client.force_login(annotator)
    return client


@pytest.fixture
def researcher_client(client, researcher):
    client.force_login(researcher)
    return client


def database_url_for_subprocess() -> str:
    """The URL of the database the tests are using right now (the test database)."""
    from django.db import connection

    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child process (worker, server) that must see the test database."""
    env = os.environ.copy()
    env.update(
        DJANGO_SETTINGS_MODULE="detectbench_web.settings.test",
        DATABASE_URL=database_url_for_subprocess(),
        PYTHONPATH=str(REPO_DIR),
    )
    env.update(extra)
    return env


class WorkerProcess:
    def __init__(self, name: str, proc: subprocess.Popen, log: Path):
        self.name, self.proc, self.log = name, proc, log

    def stop(self, sig: int | None = None) -> None:
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_celery_worker(tmp_path: Path, *, concurrency: int = 2, pool: str = "prefork",
                        extra_args: tuple[str, ...] = (), env: dict | None = None) -> WorkerProcess:
    """Start a real `celery worker` process against the real Redis and the test database; wait until it answers."""

    name = f"test-{uuid.uuid4().hex[:8]}@%h"
    log = tmp_path / f"worker-{uuid.uuid4().hex[:6]}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "detectbench_web", "worker", "--loglevel", "INFO",
         "--pool", pool, "--concurrency", str(concurrency), "--hostname", name,
         "--without-gossip", "--without-mingle", *extra_args],
        cwd=REPO_DIR, env=env or subprocess_env(), stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    worker = WorkerProcess(name, proc, log)
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if "ready." in log.read_text(errors="replace"):
            return worker
        time.sleep(0.05)  # the log is short until then: reading it is cheap
    worker.stop()
    raise RuntimeError(f"celery worker did not become ready:\n{log.read_text()[-3000:]}")


@pytest.fixture
def celery_worker(transactional_db, tmp_path):
    """A real Celery worker process; tests using it see committed data only (transactional_db)."""
    worker = start_celery_worker(tmp_path)
    yield worker
    worker.stop()


@pytest.fixture(autouse=True)
def _site_language():
    """Every test starts in the site's language: a request in another one (LocaleMiddleware activates it for the
    thread and leaves it there) or a test that activates one must not change the words the next test reads."""
    from django.conf import settings
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def _random_seeded_per_test(request):
    """Python's shared generator starts every test from the test's own seed: what the app draws from it (a belief
    label's audit key, a retry's jitter) is the same in every run, whatever ran before it in the process (xdist
    shares the tests out differently each run). A statistical property of many draws is tested on many seeded
    draws (tests/annotation/test_ppi.py), never on one draw that fails now and then."""
    random.seed(request.node.nodeid)


class _FreezeCalls:
    """Counts the calls of `gc.freeze` in this process (each one passed on to the real function, unchanged).

    `gc.get_freeze_count()` walks the whole permanent generation: with the ~230,000 objects the apps' ready() froze
    it took 20 ms a call in a test process, and asked before and after every test it cost ~40 ms a test (over 90 s of
    CPU for the suite). Every freeze in this process goes through the `gc` module's attribute (foundation.process_start,
    the apps' ready()), so a count of the calls tells the same thing at no cost."""

    def __init__(self, freeze):
        self.calls, self._freeze = 0, freeze

    def __call__(self) -> None:
        self.calls += 1
        self._freeze()


def _count_freezes() -> _FreezeCalls:
    import gc

    if not isinstance(gc.freeze, _FreezeCalls):
        gc.freeze = _FreezeCalls(gc.freeze)
    return gc.freeze


_FREEZES = _count_freezes()


# The test processes collect their youngest generation every TEST_YOUNG_GENERATION_THRESHOLD allocations instead of
# Python's 700 (the older generations as before). Tests build and drop large object graphs (migration states, every
# route's pages, figures, thousands of Hypothesis examples): at 700 the collections of a full run summed to ~120 s in
# the two test processes (a gc callback timing each one), against ~790 s of their CPU; on the modules that collect
# most (migration tests, figures, downloads) 10,000 cut that time to a third to a half and their CPU by 5-15%. What the
# app sets itself is unchanged: a model run raises it to evaluation.execution.collector.RUN_THRESHOLD (20,000, which
# must stay above this for tests/evaluation/execution/test_collector.py to see the raise) and puts it back; servers
# and workers the tests start are processes of their own with Python's default.
TEST_YOUNG_GENERATION_THRESHOLD = 10_000


def _collect_young_less_often() -> None:
    import gc

    _, older, oldest = gc.get_threshold()
    gc.set_threshold(TEST_YOUNG_GENERATION_THRESHOLD, older, oldest)


_collect_young_less_often()


@pytest.fixture(autouse=True)
def _collector_as_found():
    """A test that freezes objects (a worker's start, `manage.py evaluate` computing in its own process) freezes the
    test's own objects too: after it they are given back to the collector and what is alive then is frozen again, as
    the apps' ready() left the process. (A test that unfreezes restores the freeze itself.) Whether the test froze
    anything is told by the calls of gc.freeze (_FreezeCalls), not by gc.get_freeze_count() (20 ms a call)."""
    import gc

    from foundation.process_start import freeze_startup_objects

    freezes = _FREEZES.calls
    yield
    if _FREEZES.calls > freezes:
        gc.unfreeze()
        freeze_startup_objects()


@pytest.fixture(scope="session", autouse=True)
def _clean_test_broker():
    """Start every session with an empty broker database so stale messages are never consumed."""
    import redis
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("redis://"):
        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    yield


# The tests that take longest (seconds of setup + call at low load, from `make test PYTEST_ARGS=--durations=120`;
# four shortened since are estimates).
# Under pytest-xdist, the modules that hold them are handed out first within their pytest-django group, the
# longest first, so that the run ends on short tests and no long one starts last while the other worker idles.
# A name here that no longer exists changes nothing; a new long test belongs here too.
LONG_TESTS = {
    "tests/project/test_permission_matrix.py::test_every_route_method_and_visitor_answers_as_the_matrix_says": 65,
    "tests/evaluation/test_tasks.py::test_worker_killed_mid_run_then_relaunched_leaves_exactly_one_row_per_item": 15,
    "tests/e2e/test_walkthrough.py::test_first_hour_of_a_participant_an_annotator_and_a_researcher": 35,
    "tests/e2e/test_sweep.py::test_a_researcher_sweeps_three_models_by_two_methods_and_reads_the_results": 47,
    "tests/annotation/test_blind_everywhere.py::test_a_blind_reviewer_fetches_nothing_the_judge_said": 31,
    "tests/studies/test_concurrency.py::test_sixty_bots_at_once_fill_exactly_fifty_attempts": 29,
    "tests/project/test_api_schemathesis.py::test_no_operation_answers_a_server_error": 26,
    "tests/annotation/services/test_leases.py::test_a_burst_of_concurrent_next_item_requests_gives_no_500_and_one_live_lease_per_user_and_stage": 26,
    "tests/project/test_make_run.py::test_make_run_starts_in_production_mode_without_a_warning_and_a_second_start_does_nothing_again": 24,
    "tests/e2e/test_annotation_console.py::test_every_annotation_screen_runs_without_a_console_error": 23,
    "tests/studies/test_transient_faults.py::test_terminated_database_connections_while_30_bots_answer": 20,
    "tests/evaluation/prompting/test_circular.py::test_circular_on_the_real_test_split_first_option_scores_0_and_an_always_right_server_1": 19,
    "tests/e2e/test_participant_keyboard.py::test_sticky_timer_warns_at_five_and_one_minute_and_ends_on_the_timeout_page": 9,
    "tests/studies/prolific/services/test_bonuses.py::test_a_worker_killed_in_the_middle_of_a_bonus_batch_pays_everyone_exactly_once": 12,
    "tests/evaluation/test_tasks.py::test_429_and_500_storm_every_item_resolved_none_duplicated": 16,
    "tests/evaluation/test_execution.py::test_evaluate_command_on_the_real_test_split": 16,
    "tests/project/test_compose.py::test_gunicorn_serves_pages_with_debug_off": 15,
    "tests/evaluation/test_tasks.py::test_a_killed_judge_run_heals_by_itself_resume_is_refused_while_it_runs_and_nothing_is_asked_twice": 15,
    "tests/e2e/test_belief_review.py::test_annotator_reviews_judge_labels_and_the_trust_page_updates": 15,
    "tests/project/test_offline_assets.py::test_pages_in_chromium_make_no_request_to_another_host": 14,
    "tests/project/test_make_run.py::test_runs_handed_to_the_worker_are_computed_there": 14,
    "tests/evaluation/test_tasks.py::test_two_workers_share_the_endpoint_limit": 14,
    "tests/annotation/services/test_belief_review.py::test_two_reviewers_asking_at_once_never_get_the_same_label": 14,
    "tests/evaluation/execution/test_recovery.py::test_a_database_blip_mid_run_is_retried_and_stores_no_failed_row": 13,
    "tests/annotation/test_blind_everywhere.py::test_the_walk_finds_the_judge_when_review_is_not_blind": 13,
    "tests/project/test_csv_exports.py::test_every_csv_route_neutralises_every_formula_in_every_cell": 12,
    "tests/evaluation/test_figures.py::test_every_figure_downloads_as_png_pdf_svg_and_json": 12,
    "tests/evaluation/execution/test_recovery.py::test_a_sigkilled_worker_s_chunk_is_redelivered_without_a_manual_step": 12,
    "tests/evaluation/execution/test_recovery.py::test_a_redis_restart_mid_run_loses_nothing_and_needs_no_manual_step": 12,
    "tests/studies/test_tasks.py::test_deadline_passes_with_the_browser_closed_and_the_worker_sweeps": 11,
    "tests/studies/prolific/test_lifecycle.py::test_sixty_participants_returns_time_outs_and_bonuses_paid_once": 11,
    "tests/project/test_offline_assets.py::test_no_page_of_any_role_and_no_static_file_loads_from_another_host": 11,
    "tests/annotation/clue_graph/test_nodes.py::test_a_step_input_is_drawn_as_an_edge_exactly_when_the_checks_do_not_call_it_dangling": 11,
    "tests/studies/prolific/services/test_screen_outs.py::test_a_screen_out_gives_the_items_back_at_once_and_prolific_records_it_once": 10,
    "tests/studies/management/commands/test_run_study_bots.py::test_sixty_bots_at_concurrency_sixty_get_a_pool_that_fits_and_all_finish": 10,
    "tests/project/test_request_text.py::test_every_route_answers_400_to_a_nul_or_a_lone_surrogate_in_any_parameter": 10,
    "tests/project/test_database_blip.py::test_no_page_of_any_role_answers_500_after_the_database_backends_are_terminated": 10,
    "tests/annotation/test_content_version_migration.py::test_rows_at_old_item_versions_are_re_pinned_to_the_content_they_saw": 10,
    "tests/annotation/services/test_leases.py::test_two_annotators_asking_at_the_same_moment_200_times_never_get_the_same_item_stage": 10,
    "tests/annotation/clue_graph/test_parse.py::test_every_real_record_parses_checks_and_round_trips": 10,
    "tests/annotation/clue_graph/test_drawing.py::test_clue_graph_page_escapes_clue_text_in_the_svg_and_the_editor": 10,
    "tests/project/test_celery_roundtrip.py::test_worker_round_trips_a_task_that_writes": 8,
    "tests/evaluation/test_tasks.py::test_a_probe_launched_from_the_card_runs_on_a_worker": 8,
    "tests/evaluation/test_tasks.py::test_a_judge_run_on_a_worker": 8,
    "tests/project/test_chinese_pages.py::test_a_figure_drawn_in_chinese_finds_a_font_for_every_character": 7,
    "tests/project/test_admin_roles.py::test_every_model_view_and_role_answers_as_the_policy_says": 7,
    "tests/evaluation/management/commands/test_evaluate.py::test_through_a_celery_worker_a_dead_endpoint_fails_the_run_and_evaluate_exits_non_zero": 7,
    "tests/e2e/test_annotation_workflow.py::test_annotator_verifies_with_keys_moves_on_by_itself_and_sees_decisions_read_only": 7,
    "tests/backup/test_backup.py::test_round_trip_through_a_freshly_migrated_database_is_byte_identical": 7,
    "tests/annotation/test_confidence_sequence.py::test_in_the_queue_design_the_stopped_interval_covers_the_share_of_the_queue_labels": 7,
    "tests/e2e/test_annotation_workflow.py::test_clue_fix_by_selection_updates_the_picture_the_badge_and_the_checks": 6,
    "tests/annotation/selectors/test_belief_trust.py::test_a_random_share_of_zero_gives_no_weighted_estimate_and_says_why": 6,
    "tests/project/test_compose.py::test_the_worker_starts_and_its_health_check_answers": 5,
    "tests/project/test_chinese_pages.py::test_every_page_of_every_role_reads_in_chinese": 5,
    "tests/evaluation/test_figures.py::test_figure_command_writes_each_format": 5,
    "tests/annotation/test_confidence_sequence.py::test_a_review_sequence_stopped_at_its_precision_target_covers_the_truth": 5,
    "tests/project/test_lazy_imports.py::test_the_heavy_libraries_come_with_their_first_use": 4,
    "tests/e2e/test_endpoint_connection.py::test_testing_the_connection_from_the_create_form": 4,
    "tests/annotation/test_keyinfo.py::test_a_worker_start_builds_the_scorer_so_no_run_waits_for_its_import": 4,
    "tests/annotation/selectors/test_belief_trust.py::test_reviewers_answering_at_random_get_no_pooled_kappa_and_about_zero_per_criterion": 4,
    "tests/annotation/clue_graph/test_anchor.py::test_every_real_record_anchors": 4,
}


# Modules that stay where pytest-django puts them: tests/backup/test_backup.py's module fixture empties the test
# database (as a transactional test does) although its tests are not transactional, so the tests collected
# before it (tests/annotation's, which need the rows `migrate` writes) must still run before it.
STAY_IN_PLACE = {"tests/backup/test_backup.py"}


def _django_group(item: pytest.Item) -> int:
    """pytest-django's order of a test (pytest_django.plugin.pytest_collection_modifyitems): 0 in a rolled-back
    transaction, 1 transactional (commits, empties the tables after), 2 without the database."""
    from django.test import TestCase, TransactionTestCase
    from pytest_django.plugin import validate_django_db

    cls = getattr(item, "cls", None)
    if cls and issubclass(cls, TransactionTestCase):
        return 0 if issubclass(cls, TestCase) else 1
    marker = item.get_closest_marker("django_db")
    transactional = False
    if marker:
        transaction, reset_sequences, *_ = validate_django_db(marker)
        transactional = transaction or reset_sequences
    fixtures = getattr(item, "fixturenames", [])
    if transactional or "transactional_db" in fixtures or "live_server" in fixtures:
        return 1
    return 0 if marker or "db" in fixtures else 2


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """On a pytest-xdist worker, after pytest-django has put the tests in its order (which stays: no test in a
    rolled-back transaction runs after one that empties the tables): within each group, the tests of the
    modules that hold a long test of that group go first, the module with the longest one first; a module's
    tests keep their order. Modules with a long test that needs no database (group 2) go before everything:
    where those run changes nothing. Every worker collects the same items and sorts them the same way, as
    pytest-xdist requires; a run without pytest-xdist keeps pytest-django's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    groups = [_django_group(item) for item in items]
    longest: dict[tuple[str, int], int] = {}
    for item, group in zip(items, groups, strict=True):
        key = (item.nodeid.split("::", 1)[0], group)
        if key[0] not in STAY_IN_PLACE:
            longest[key] = max(longest.get(key, 0), LONG_TESTS.get(item.nodeid, 0))

    def order(index: int):
        item, group = items[index], groups[index]
        module_longest = longest.get((item.nodeid.split("::", 1)[0], group), 0)
        phase = {0: 1, 1: 2, 2: 0 if module_longest else 3}[group]
        return phase, -module_longest, index

    items[:] = [items[index] for index in sorted(range(len(items)), key=order)]


# Modules whose tests stay together on one pytest-xdist worker: their module fixtures start a whole
# stack (migrated database, gunicorn, worker, beat) that would otherwise start once per worker.
XDIST_WHOLE_MODULES = {"tests/project/test_compose.py"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `-n N` (with the default --dist load): tests go to the workers one at a time, in collection
    order, so each worker runs them in pytest-django's order (tests in a rolled-back transaction before
    those that commit and empty the tables, as in a serial run); the modules above go as one unit."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in XDIST_WHOLE_MODULES else nodeid

    return _Scheduling(config, log)


@pytest.fixture
def database_down():
    """While in use, every new connection of this process goes to a port where no database listens."""
    from django.db import connection

    settings_dict = connection.settings_dict
    port = settings_dict.get("PORT")

    class Down:
        def __enter__(self):
            connection.close()
            settings_dict["PORT"] = "1"

        def __exit__(self, *exc):
            settings_dict["PORT"] = port
            connection.close()

    yield Down()
    settings_dict["PORT"] = port
