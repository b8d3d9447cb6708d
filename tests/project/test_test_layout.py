"""The tests mirror the code (issue 17, point 6): under tests/annotation, tests/studies, tests/evaluation and
tests/foundation every test module is named after the code module it tests and sits in the mirrored folder
(tests/evaluation/views/test_endpoints.py tests evaluation/views/endpoints.py; a test named after a package,
tests/studies/test_services.py, tests the package). A module that tests one behaviour across several modules is
named in ALLOWED below with its reason. The cross-cutting suites (tests/project, tests/e2e, tests/perf,
tests/backup) are not held to this."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO_DIR

APPS = ("annotation", "studies", "evaluation", "foundation")
TESTS = REPO_DIR / "tests"

#: To move: test modules of folders other sessions were working in when the rule came; each is to be moved to (or
#: merged into) the test module of the code module it tests, and its entry removed.
TO_MOVE = "to move (owned elsewhere when the layout was set)"

#: Test modules not named after one code module, each with its reason (paths relative to tests/).
ALLOWED: dict[str, str] = {
    # Behaviours across several modules.
    "annotation/test_content_version_migration.py":
        "the data migrations of three apps (annotation 0008, evaluation 0009, studies 0006) on one database",
    "annotation/test_highest_content_version_migration.py":
        "the data migration annotation 0015 (Item.highest_content_version from the revisions)",
    "evaluation/test_judge_label_versions_migration.py":
        "the data migration evaluation 0014 on judge labels (annotation) of current and superseded results, and the "
        "trust figures and quality card that read them",
    "annotation/test_blind_everywhere.py":
        "blind review leaks nothing the judge said through any route (discovered from the URL configuration), "
        "page, partial, API or export, with labels from the real judge",
    "annotation/test_with_builtin_judge.py":
        "the built-in judge (evaluation) records labels that the review queue, the trust page and the verification "
        "screen (annotation) then work on, end to end",
    "studies/prolific/test_lifecycle.py":
        "a 60-participant study's whole Prolific lifecycle: webhooks, returns, reviews and bonuses together",
    "studies/test_screen_out_readers.py":
        "every reader of a study (discovered: selectors, setup checks, pages) leaves screened-out answers out",
    "studies/test_transient_faults.py":
        "database connections terminated while bots answer through every participant page and service",
    "studies/test_concurrency.py":
        "concurrent participants (bots over real HTTP, threads on their own connections): starts, answers, dropouts "
        "and the sweep together keep every item at exactly its raters",
}


def _test_modules() -> list[Path]:
    return sorted(path for app in APPS for path in (TESTS / app).rglob("test_*.py"))


def _tested_module(test: Path) -> Path:
    """tests/<app>/<folders>/test_<name>.py -> <app>/<folders>/<name> (a module <name>.py or a package <name>/)."""
    relative = test.relative_to(TESTS)
    return REPO_DIR / relative.parent / relative.name.removeprefix("test_").removesuffix(".py")


def _names_a_module(test: Path) -> bool:
    target = _tested_module(test)
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def test_every_test_module_is_named_after_the_code_module_it_tests():
    modules = _test_modules()
    assert len(modules) > 50  # the walk found the tests
    unplaced = [str(t.relative_to(TESTS)) for t in modules
                if not _names_a_module(t) and str(t.relative_to(TESTS)) not in ALLOWED]
    assert not unplaced, (
        "name each test module after the code module it tests, in the mirrored folder "
        "(tests/<app>/<folders>/test_<module>.py), or name it in ALLOWED with its reason: " + ", ".join(unplaced))


def test_the_allow_list_has_no_stale_entry():
    stale = []
    for relative, reason in ALLOWED.items():
        test = TESTS / relative
        if not test.is_file():
            stale.append(f"{relative} (no such file)")
        elif _names_a_module(test):
            stale.append(f"{relative} (named after {_tested_module(test).relative_to(REPO_DIR)} now)")
        elif not reason.strip():
            stale.append(f"{relative} (no reason)")
    assert not stale, "remove or fix these entries of ALLOWED: " + ", ".join(stale)


def test_the_rule_tells_a_mirrored_test_from_an_event_named_one():
    """The check itself: a module, a package and a nested module are found; an event name is not."""
    assert _names_a_module(TESTS / "evaluation/views/test_endpoints.py")        # evaluation/views/endpoints.py
    assert _names_a_module(TESTS / "studies/test_services.py")                  # studies/services/ (a package)
    assert _names_a_module(TESTS / "studies/prolific/services/test_bonuses.py")
    assert not _names_a_module(TESTS / "evaluation/test_first_hour_fixes.py")
    assert not _names_a_module(TESTS / "evaluation/test_endpoints.py")          # not in the mirrored folder
    assert not _names_a_module(TESTS / "studies/test_selectors_exports.py")
