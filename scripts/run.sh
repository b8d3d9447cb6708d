#!/usr/bin/env bash
# `make run`: migrate, load the sample data, create demo accounts, start the worker and the web server.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
# The local demo runs with DEBUG on (settings default to off); export DEBUG=0 and a SECRET_KEY to try production mode.
export DEBUG=${DEBUG:-1}
# Model endpoints on this machine (a local llama.cpp or vLLM) stay allowed in production mode too (DEBUG=0 refuses
# loopback, private and link-local addresses unless listed here).
export EVALUATION_ENDPOINT_ALLOWED_NETWORKS=${EVALUATION_ENDPOINT_ALLOWED_NETWORKS:-127.0.0.0/8,::1/128}
# The embedded stack keeps its SQLite database, Celery broker and static files under var/ (settings never create folders).
mkdir -p var/celery-broker/queue var/celery-broker/processed var/staticfiles var/log

$PY manage.py migrate --noinput
$PY manage.py load_sample_data
$PY manage.py create_demo_accounts
# A demo study over the sample test items, so a newcomer has a study to take.
if ! $PY manage.py shell --no-imports -c "from studies.models import Study; raise SystemExit(0 if Study.objects.filter(slug='demo').exists() else 1)"; then
  $PY manage.py create_study --slug demo --title "Demo study" --split test --per-participant 5 --raters 3 \
    --time-limit 1800 --status open --completion-code DEMO2026 --timeout-code DEMO2026-TIMEOUT
fi
# Baseline runs of the built-in offline models, so the evaluation dashboard has results to read.
if ! $PY manage.py shell --no-imports -c "from evaluation.models import Run; raise SystemExit(0 if Run.objects.exists() else 1)"; then
  for model in first-option lexical random; do
    $PY manage.py evaluate --builtin "$model" --method naive,detective-thinking --split test --in-process --wait --no-progress
  done
fi
# A free-text run judged by the built-in offline judge, and the sample items screened by it, so the
# belief-label review queue and the verification screen have the judge's labels.
if ! $PY manage.py shell --no-imports -c "from evaluation.models import JudgeRun; raise SystemExit(0 if JudgeRun.objects.exists() else 1)"; then
  FREE_TEXT_RUN=$($PY manage.py evaluate --builtin lexical --method free-text --split test --in-process --wait --no-progress \
    | $PY -c "import json, sys; print(json.loads(sys.stdin.readline())['run'])")
  $PY manage.py judge --config builtin --run "$FREE_TEXT_RUN" --wait --in-process
  $PY manage.py judge --config builtin --split test --task screening --wait --in-process
fi
$PY manage.py collectstatic --noinput -v0

# One worker with an embedded beat scheduler (periodic sweeps); more workers scale out.
.venv/bin/celery -A detectbench_web worker --beat --loglevel INFO --concurrency 2 \
  --schedule var/celerybeat-schedule >var/log/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null || true' EXIT INT TERM

cat <<MSG

  DetectBench Web is running at http://$HOST:$PORT/

  Demo logins:
    researcher / researcher-demo   (dashboard, studies, model runs, admin)
    annotator  / annotator-demo    (item browser and curation queues)
    annotator2 / annotator-demo    (a second annotator, for reviews and agreement)

  Model runs: http://$HOST:$PORT/evaluation/runs/ (built-in baselines already run)
  Take the demo study as a participant (no account): http://$HOST:$PORT/s/demo/
  Worker log: var/log/worker.log     Stop with Ctrl-C.

MSG
$PY manage.py runserver --noreload "$HOST:$PORT"
