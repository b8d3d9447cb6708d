#!/usr/bin/env bash
# `make install`: the virtual environment, with pip run only when the dependencies changed.
# The stamp (.venv/.installed) holds a hash of what pip installs from pyproject.toml: the Python range, the
# dependency lists and the package list. Make calls this when pyproject.toml is newer than the stamp; a change
# elsewhere in the file (the linters' settings) only renews the stamp.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-python3}
VENV=${2:-.venv}
STAMP="$VENV/.installed"
want=$("$PYTHON" - <<'PYCODE'
import hashlib, json, tomllib
with open("pyproject.toml", "rb") as f:
    data = tomllib.load(f)
project = data["project"]
parts = [project.get("requires-python"), project.get("dependencies"), project.get("optional-dependencies"),
         data.get("build-system"), data.get("tool", {}).get("setuptools")]
print(hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest())
PYCODE
)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
  touch "$STAMP"
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[dev]"
echo "$want" >"$STAMP"
