#!/usr/bin/env bash
# `make run`: set up what is missing in one process (manage.py setup_demo), then start the worker and the web server.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
VAR=${VAR_DIR:-var}
# Production mode on this machine (detectbench_web/settings/local.py): DEBUG off, so the app's own error pages;
# hashed static files served by whitenoise; plain HTTP; the secret key below. The environment (or .env) wins.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-detectbench_web.settings.local}
# The names this server answers to: this machine's own, and with HOST=0.0.0.0 its host name and IPv4 addresses.
if [ -z "${ALLOWED_HOSTS:-}" ]; then
  ALLOWED_HOSTS="localhost,127.0.0.1,[::1]"
  case "$HOST" in
    0.0.0.0|::) for name in $(hostname) $(hostname -I 2>/dev/null || true); do
                  case "$name" in *:*) ;; *) ALLOWED_HOSTS="$ALLOWED_HOSTS,$name" ;; esac
                done ;;
    127.0.0.1|localhost|::1) ;;
    *) ALLOWED_HOSTS="$ALLOWED_HOSTS,$HOST" ;;
  esac
  export ALLOWED_HOSTS
fi
# The embedded stack keeps its SQLite database, Celery broker and static files under var/ (settings never create folders).
mkdir -p "$VAR/celery-broker/queue" "$VAR/celery-broker/processed" "$VAR/log"
# A secret key of this machine's own, generated on the first start and kept (readable by this user only).
if [ ! -s "$VAR/secret_key" ]; then
  (umask 077 && $PY -c "import secrets; print(secrets.token_urlsafe(50))" >"$VAR/secret_key.new" \
    && mv "$VAR/secret_key.new" "$VAR/secret_key")
fi
chmod 600 "$VAR/secret_key"

# Migrations, sample data (edited items kept), demo accounts, the demo study and static files, each only when
# missing; the built-in baseline and judge runs, when missing, go to the worker so the pages are up sooner.
$PY manage.py setup_demo --runs worker

# One worker with an embedded beat scheduler (periodic sweeps); more workers scale out. It starts once the web
# server listens, so that the first page does not wait for the worker's start (nor the demo's runs it then computes).
case "$HOST" in 0.0.0.0) SERVER=127.0.0.1 ;; ::) SERVER=::1 ;; *) SERVER=$HOST ;; esac
(
  for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/$SERVER/$PORT") 2>/dev/null && break; sleep 0.1; done
  exec .venv/bin/celery -A detectbench_web worker --beat --loglevel INFO \
    --schedule "$VAR/celerybeat-schedule"
) >"$VAR/log/worker.log" 2>&1 &
WORKER=$!
stop_worker() {
  kill -TERM "$WORKER" 2>/dev/null || return 0
  echo "Stopping the worker (a few seconds)..."
  # A warm shutdown lets a running task finish; after 15 s the worker is stopped outright.
  for _ in $(seq 1 150); do kill -0 "$WORKER" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$WORKER" 2>/dev/null || true
}
trap stop_worker EXIT INT TERM

cat <<MSG

  DetectBench Web is running at http://$HOST:$PORT/

  Demo logins:
    researcher / researcher-demo   (dashboard, studies, model runs, admin)
    annotator  / annotator-demo    (item browser and curation queues)
    annotator2 / annotator-demo    (a second annotator, for reviews and agreement)

  Model runs: http://$HOST:$PORT/evaluation/runs/ (built-in baselines; on a first start the worker adds them
              within a minute)
  Take the demo study as a participant (no account): http://$HOST:$PORT/s/demo/
  Worker log: $VAR/log/worker.log     Stop with Ctrl-C.

MSG
# The development server serves this one machine; a deployment runs gunicorn (README, "PostgreSQL and Redis"), so
# Django's warning against using it in production is not for the person running the demo.
DJANGO_RUNSERVER_HIDE_WARNING=true $PY manage.py runserver --noreload "$HOST:$PORT"
