#!/usr/bin/env bash
# Every check the project has: setup, ruff (lint + format), mypy, then the whole pytest suite.
# Runs every step even after a failure and exits non-zero when any failed.
# Extra arguments go to pytest (e.g. scripts/test.sh -x -k ledger), which then runs as one
# process; without them the suite runs as two shards at once (below).
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
if [ "$#" -gt 0 ]; then
  run pytest tests --durations=60 "$@"
else
  # The whole suite as two pytest processes at once, one per core: the tests that start
  # stacks of their own or need none (the fault suite, which kills and restarts its own
  # services; eo-stack's own tests; the unit and setup tests), and the tests on the session's
  # stack and Airflow. Much of a test is waiting on servers, so the two overlap well; each
  # prints its lines with its shard's name, and its own slowest modules and tests.
  own_stacks=(tests/faults tests/integration/test_devstack.py tests/integration/test_devstack_yarn.py
    tests/unit tests/setup)
  shard() {
    local name="$1"
    shift
    echo "==> [$name] pytest $*"
    pytest "$@" 2>&1 | sed -u "s/^/[$name] /"
  }
  shard own-stacks "${own_stacks[@]}" --durations=30 -p no:cacheprovider &
  own_pid=$!
  shard session-stack tests "${own_stacks[@]/#/--ignore=}" --durations=30 &
  session_pid=$!
  wait "$own_pid" || failed+=("pytest ${own_stacks[*]}")
  wait "$session_pid" || failed+=("pytest tests ${own_stacks[*]/#/--ignore=}")
fi

if [ "${#failed[@]}" -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "all checks passed"
