#!/usr/bin/env bash
# Setup (idempotent), then the main job: the demo on the local stack
# (python -m eo_devtools.demo: produce sample events, run the DAGs through
# Airflow until drained, replay a range as a backfill, verify, print a JSON report).
# Extra arguments go to the demo (e.g. --events 20000). The stack keeps running
# afterwards: `eo-stack status`, `eo-ledger epochs`, `eo-stack down`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate
exec python -m eo_devtools.demo "$@"
