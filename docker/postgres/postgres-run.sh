#!/usr/bin/env bash
# First start (no $PGDATA/PG_VERSION): initdb with POSTGRES_USER as superuser and
# POSTGRES_PASSWORD read from a pipe, password logins from the network, POSTGRES_DB created,
# then each /docker-entrypoint-initdb.d/*.sh run against a socket-only server. Then postgres.
set -euo pipefail
: "${POSTGRES_USER:?}" "${POSTGRES_PASSWORD:?}"
db="${POSTGRES_DB:-$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 -D "$PGDATA"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  [ "$db" = postgres ] || createdb --username="$POSTGRES_USER" "$db"
  export POSTGRES_DB="$db"
  for script in /docker-entrypoint-initdb.d/*.sh; do
    [ -e "$script" ] && bash "$script"
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
unset POSTGRES_PASSWORD
exec postgres -D "$PGDATA" -c listen_addresses='*'
