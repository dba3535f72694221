#!/usr/bin/env bash
# hbase-run.sh master | thrift [PORT] | tool ARGS...  -- HBase from its Maven jars, with the
# JVM options bin/hbase adds on JDK 17 (HBASE-26038), eo_devtools.stack.hbase_layout's list.
set -euo pipefail
opts=(-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
  --add-modules=jdk.unsupported --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports=java.base/sun.net.dns=ALL-UNNAMED --add-exports=java.base/sun.net.util=ALL-UNNAMED
  "-Dlog4j.configuration=file:${HBASE_CONF_DIR}/log4j.properties")
cp="${HBASE_CONF_DIR}:${HBASE_HOME}/lib/*"
heap="-Xmx${HBASE_HEAPSIZE:-1G}"
case "${1:-}" in
  master) exec java "$heap" "${opts[@]}" -cp "$cp" org.apache.hadoop.hbase.master.HMaster start ;;
  thrift) exec java "$heap" "${opts[@]}" -cp "$cp" org.apache.hadoop.hbase.thrift.ThriftServer -p "${2:-9090}" start ;;
  tool) shift; exec java -Xmx256m "${opts[@]}" -cp "$cp" /opt/eo/HBaseTableTool.java "$@" ;;
  *) echo "usage: hbase-run.sh master | thrift [PORT] | tool ARGS..." >&2; exit 2 ;;
esac
