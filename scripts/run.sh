#!/usr/bin/env bash
# `make run`: migrate, load the sample data, create demo accounts, start the worker and the web server.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}

$PY manage.py migrate --noinput
$PY manage.py load_sample_data
$PY manage.py create_demo_accounts
$PY manage.py collectstatic --noinput -v0

mkdir -p var/log
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

  Participants need no account: a researcher shares a study link /s/<slug>/.
  Worker log: var/log/worker.log     Stop with Ctrl-C.

MSG
$PY manage.py runserver --noreload "$HOST:$PORT"
