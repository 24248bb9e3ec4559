#!/usr/bin/env bash
# Set up (or reuse) the local virtual environment, then run the demo or the tests.
#   ./run.sh demo   -> the project's own quadruped policy (trained on PhysX, shipped in checkpoints/) replayed on
#                      Newton at 4 envs: native on PhysX, reordered on Newton, naive on Newton; a table, a PNG in out/
#   ./run.sh test   -> the whole test suite
# Extra arguments are passed on (./run.sh test -k name_map; ./run.sh demo --num-envs 4 --json).
# Needs only Python 3.11+ with pip. Idempotent: reinstalls only when pyproject.toml or this file changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PYTHON="${PYTHON:-python3}"
VENV="${TRANSFER_VENV:-.venv}"
STAMP="$VENV/.transfer-installed"
want="$(cat pyproject.toml run.sh | sha256sum | cut -d' ' -f1)"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[run.sh] creating virtual environment in $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "[run.sh] installing transfer and its engines into $VENV (first run takes a few minutes)" >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  # torch 2.13.0 is pinned here: on these machines it resolves to the CPU build already on disk,
  # where an unpinned torch would pull a multi-GB CUDA build.
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0" -e ".[all]"
  echo "$want" > "$STAMP"
fi

cmd="${1:-}"
shift || true
case "$cmd" in
  demo)
    mkdir -p out
    exec "$VENV/bin/transfer" replay checkpoints/quadruped_flat_physx/exported/policy.pt --target newton --compare \
      --num-envs 4 --plot out/demo-replay.png "$@" ;;
  test) exec "$VENV/bin/python" -m pytest "$@" ;;
  *) echo "usage: ./run.sh demo|test [args...]" >&2; exit 2 ;;
esac
