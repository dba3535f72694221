#!/usr/bin/env bash
# Every check the project has: setup, ruff (lint + format), mypy, then the whole pytest suite.
# Runs every step even after a failure and exits non-zero when any failed.
# Extra arguments go to pytest (e.g. scripts/test.sh -x -k ledger).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate

failed=()
run() {
  echo "==> $*"
  "$@" || failed+=("$*")
}
run ruff check .
run ruff format --check .
run mypy
run pytest tests --durations=60 "$@"

if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "all checks passed"
