"""``python -m eo_devtools.stack.hbase_kerberos_probe PORT``: exit 0 when the Kerberized Thrift
server on 127.0.0.1:PORT answers ``getTableNames`` and a read of ``hbase:meta`` over SASL, logged
in with the HBase connection extra read as JSON from stdin (paths only, no secret); else exit 1
with the cause on stderr. A process of its own: the Kerberos login sets process-wide variables.
"""

from __future__ import annotations

import json
import sys

from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.hbase_thrift import hbase_connection


def main(argv: list[str]) -> int:
    extra = {**json.loads(sys.stdin.read()), "timeout_ms": "5000"}
    target = EoConnection("probe", host="127.0.0.1", port=int(argv[0]), extra=extra)
    settings = hbase_connection_kwargs(target)
    try:
        connection = hbase_connection(settings, conn_id="probe")
        try:
            connection.tables()
            connection.client.getRow(b"hbase:meta", b"hbase:namespace", {})
        finally:
            connection.close()
    except Exception as exc:
        print(f"not ready: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
