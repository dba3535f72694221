#!/usr/bin/env bash
# Creates the epoch ledger role and database next to Airflow's metadata database.
# psql reads the password from the environment (\getenv), so it is never on a command line.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
\getenv eo_password EO_LEDGER_PASSWORD
CREATE ROLE eo LOGIN PASSWORD :'eo_password';
CREATE DATABASE eo OWNER eo;
SQL
