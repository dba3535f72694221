#!/usr/bin/env bash
# Setup (idempotent), then the main job: the demo on the local stack with Airflow
# (python -m eo_devtools.demo: start PostgreSQL, Kafka, HBase and Airflow's api-server,
# scheduler, dag-processor and triggerer; produce sample events; trigger the stream DAG
# through Airflow's REST API until drained; replay a range through the backfill DAG;
# verify; print a JSON report, then the Airflow URL, the login file and what to look at).
# Extra arguments go to the demo (e.g. --events 20000). Everything keeps running
# afterwards: `eo-stack status` shows the URL again, `eo-stack down` stops it all.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate
exec python -m eo_devtools.demo "$@"
