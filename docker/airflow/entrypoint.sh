#!/usr/bin/env bash
# The eo-airflow image's command runner (after eo_env.py): an Airflow subcommand
# (api-server, scheduler, dag-processor, triggerer, celery, db, ...) runs as `airflow ARGS`,
# anything else (bash, spark-class, eo-ledger) runs as it is; no arguments: `airflow version`.
set -euo pipefail
case "${1:-}" in
  "") exec airflow version ;;
  api-server | scheduler | dag-processor | triggerer | celery | db | dags | tasks | jobs | config | connections | info | version)
    exec airflow "$@" ;;
esac
exec "$@"
