#!/usr/bin/env bash
# Runs one Kafka node from its environment, as the apache/kafka image does: every KAFKA_X_Y
# variable becomes the property x.y of /opt/kafka/config/server.properties (KAFKA_HEAP_OPTS
# aside); CLUSTER_ID formats the log dirs on the first start (meta.properties marks them).
set -euo pipefail
props=/opt/kafka/config/server.properties
: > "$props"
while IFS='=' read -r name value; do
  case "$name" in KAFKA_HEAP_OPTS|KAFKA_VERSION) continue ;; esac
  key=$(printf '%s' "${name#KAFKA_}" | tr '[:upper:]_' '[:lower:].')
  printf '%s=%s\n' "$key" "$value" >> "$props"
done < <(env | grep -E '^KAFKA_[A-Z0-9_]+=')
cp="/opt/kafka/lib/*"
log_dir=$(sed -n 's/^log\.dirs=//p' "$props" | cut -d, -f1)
if [ ! -e "${log_dir:-/var/lib/kafka/data}/meta.properties" ]; then
  java -cp "$cp" kafka.tools.StorageTool format --ignore-formatted -t "${CLUSTER_ID:?}" -c "$props"
fi
# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m} -cp "$cp" kafka.Kafka "$props"
