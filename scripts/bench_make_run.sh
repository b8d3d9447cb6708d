#!/usr/bin/env bash
# Benchmark of `make run` as a newcomer meets it (issue 23): prints the install time, the seconds from `make run`
# on a fresh clone (after the install) to the first page answering, the same for a second `make run`, and when the
# worker has added the demo's model and judge runs. Goals on a 2-core machine: first page within 60 s, second
# within 10 s.
#
#   scripts/bench_make_run.sh                  # a copy of this working tree (the files a clone of it would have)
#   BENCH_KEEP=1 scripts/bench_make_run.sh     # keep the copy (its path is printed)
#   BENCH_DIR=/tmp/x scripts/bench_make_run.sh # into a kept copy: its .venv stays, so `make install` finds nothing
#                                              # to install (the figure for a dependency-free change); var/ is new
#
# The copy gets its own .venv (pip's cache is used as this machine has it), its own var/ and a free port; each
# `make run` is stopped as Ctrl-C stops it (its process group is signalled). Figures are wall-clock seconds; the
# load average is printed beside them, as other work on the machine slows them.
set -euo pipefail
# As a newcomer's shell: no settings of a test run or of a deployment (make run's defaults are measured).
unset DJANGO_SETTINGS_MODULE DATABASE_URL REDIS_URL SECRET_KEY DEBUG VAR_DIR STATIC_ROOT ALLOWED_HOSTS
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
GOAL_FIRST=60
GOAL_SECOND=10
if [ -n "${BENCH_DIR:-}" ]; then
  DIR=$BENCH_DIR BENCH_KEEP=1
  mkdir -p "$DIR" && rm -rf "$DIR/var"
else
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-make-run.XXXXXX")
fi
PORT=$("$PYTHON" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
RUN_PID=""

cleanup() {
  stop_run
  if [ -n "${BENCH_KEEP:-}" ]; then echo "kept: $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { "$PYTHON" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# Ctrl-C, as a person stops it: SIGINT to its process group; STOPPED_S: seconds until every process of it is gone.
stop_run() {
  [ -n "$RUN_PID" ] || return 0
  local started
  started=$(now)
  kill -INT -- "-$RUN_PID" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 -- "-$RUN_PID" 2>/dev/null || break; sleep 0.1; done
  STOPPED_S=$(since "$started")
  if kill -0 -- "-$RUN_PID" 2>/dev/null; then
    echo "  still running 30 s after Ctrl-C: killed" >&2
    kill -KILL -- "-$RUN_PID" 2>/dev/null || true
  fi
  RUN_PID=""
}

# Seconds from `make run` until GET / (following its redirect to the login page) answers 200, into ELAPSED
# (not printed: a command substitution would run it in a subshell, which would keep RUN_PID to itself).
time_make_run() {
  local log=$1 started code
  started=$(now)
  # A process group of its own (to stop it whole), with SIGINT not ignored (a background job's would be).
  "$PYTHON" -c "import os, signal, sys; os.setsid(); signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])" \
    make -C "$DIR" run PORT="$PORT" >"$log" 2>&1 &
  RUN_PID=$!
  while true; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -L --max-time 5 "http://127.0.0.1:$PORT/" || true)
    [ "$code" = 200 ] && break
    if ! kill -0 "$RUN_PID" 2>/dev/null; then
      echo "make run stopped before the first page answered:" >&2
      tail -30 "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  ELAPSED=$(since "$started")
}

# Seconds (from `started`) until the database holds the demo's finished runs (7) and judge runs (2).
wait_for_demo_runs() {
  local started=$1
  for _ in $(seq 1 1200); do
    if "$DIR/.venv/bin/python" - "$DIR/var/db.sqlite3" <<'PYCODE' 2>/dev/null; then
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=1)
runs = db.execute("select count(*) from evaluation_run where status = 'finished'").fetchone()[0]
judged = db.execute("select count(*) from evaluation_judgerun where status = 'finished'").fetchone()[0]
sys.exit(0 if runs >= 7 and judged >= 2 else 1)
PYCODE
      since "$started"
      return 0
    fi
    sleep 0.25
  done
  echo "not within 5 min"
}

echo "copying the working tree to $DIR (HEAD $(git -C "$REPO" rev-parse --short HEAD), with its changes)"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf -) | tar -xf - -C "$DIR"

echo "load average before: $(load)"
started=$(now)
make -C "$DIR" install PYTHON="$PYTHON" >"$DIR/install.log" 2>&1 || { tail -30 "$DIR/install.log" >&2; exit 1; }
install_s=$(since "$started")
echo "install (make install${BENCH_DIR:+ in a kept copy}; pip's cache as on this machine): $install_s s"

load_first=$(load)
run_started=$(now)
time_make_run "$DIR/run1.log"
first_s=$ELAPSED
echo "first make run, fresh clone after the install: first page in $first_s s (goal <= $GOAL_FIRST s; load $load_first)"
runs_s=$(wait_for_demo_runs "$run_started")
echo "  the worker's demo model and judge runs finished $runs_s s after make run started"
stop_run
echo "  stopped by Ctrl-C in $STOPPED_S s"

load_second=$(load)
time_make_run "$DIR/run2.log"
second_s=$ELAPSED
echo "second make run: first page in $second_s s (goal <= $GOAL_SECOND s; load $load_second)"
for log in "$DIR/run1.log" "$DIR/run2.log"; do
  if grep -i "warning" "$log" | grep -qv "django\.\(request\|server\): "; then
    echo "  warnings printed at start ($log):"; grep -i "warning" "$log" | sed 's/^/    /'
  fi
done
stop_run

echo "figures: install $install_s s, first make run $first_s s, second make run $second_s s"
"$PYTHON" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= $GOAL_FIRST and float(sys.argv[2]) <= $GOAL_SECOND else 1)" \
  "$first_s" "$second_s" || { echo "over a goal"; exit 2; }
