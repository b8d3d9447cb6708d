# DetectBench Web: `make run` (everything, embedded) and `make test` (the whole suite on PostgreSQL + Redis).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEST_ENV := DJANGO_SETTINGS_MODULE=detectbench_web.settings.test

.PHONY: install run test lint bench services clean real-model

# pip runs only when the dependencies in pyproject.toml changed (scripts/install.sh keeps their hash in the stamp).
$(VENV)/.installed: pyproject.toml
	./scripts/install.sh "$(PYTHON)" "$(VENV)"

install: $(VENV)/.installed

run: install
	./scripts/run.sh

services:
	./scripts/ensure_services.sh

# Two pytest-xdist workers, each with its own test database (test_<name>_gw0/_gw1) and Redis database
# (two neighbouring numbers picked from the run's id; detectbench_web/settings/test.py); TEST_WORKERS=0 runs the suite
# in one process.
TEST_WORKERS ?= 2

# PYTHONDONTWRITEBYTECODE is cleared (some machines set it): the test processes and every child they start
# (manage.py, gunicorn, Celery workers) then keep the compiled modules in __pycache__ (git-ignored) instead of
# compiling the project again at each start; collecting the suite takes 6 s of CPU instead of 16 s per process.
test: install services
	$(TEST_ENV) PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -m "not perf" -n $(TEST_WORKERS) --durations=20 $(PYTEST_ARGS)

# The house's rules: import-linter's contracts (pyproject.toml: floors, pure packages, layers) and ruff.
# tests/project/test_architecture.py runs both within `make test` too; this is the quick way, without the suite.
lint: install
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .

bench: install services
	$(TEST_ENV) $(PY) -m pytest tests/perf -m perf -s $(PYTEST_ARGS)

clean:
	rm -rf var/db.sqlite3* var/celery-broker var/staticfiles var/staticfiles.stamp var/log var/celerybeat-schedule* var/setup-demo-runs.lock

# A real model (llama.cpp + SmolLM2-135M) answering a few items; not part of `make test` (first build ~20 min).
real-model: install
	./scripts/real_model.sh
