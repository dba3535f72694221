#!/usr/bin/env bash
# Setup, then the main job on the local stack. For now: start the stack and check that
# every service answers a real request (python -m airflow_provider_eo.devstack.selfcheck).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate
exec python -m airflow_provider_eo.devstack.selfcheck "$@"
