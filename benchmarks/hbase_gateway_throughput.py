"""Throughput of the local HBase Thrift gateway through happybase (not part of the test suite).

Starts a gateway in a temp dir (or uses ``--port`` of a running one), writes
``--batches`` mutateRowsTs calls of 1,000 rows x ``--columns`` columns each,
then scans everything back with batch_size=1000, and prints rows/s and cells/s
as JSON. Example::

    python benchmarks/hbase_gateway_throughput.py --transport framed --protocol compact
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import happybase

ROWS_PER_BATCH = 1000


def start_gateway(data_dir: Path, transport: str, protocol: str) -> tuple[subprocess.Popen[bytes], int]:
    """Start a gateway subprocess on a free port; return it and its port."""
    log_path = data_dir / "gateway.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airflow_provider_eo.devstack.hbase",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(data_dir / "data"),
                "--transport",
                transport,
                "--protocol",
                protocol,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log_path.read_text().splitlines():
            if " ready host=" in line:
                return process, int(line.split("port=")[1].split()[0])
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(log_path.read_text())


def run(port: int, transport: str, protocol: str, batches: int, columns: int) -> dict[str, object]:
    """Write then scan; return the measured figures."""
    conn = happybase.Connection("127.0.0.1", port, transport=transport, protocol=protocol)
    name = f"bench_{int(time.time() * 1000)}"
    conn.create_table(name, {"cf": {"max_versions": 1}})
    table = conn.table(name)
    qualifiers = [b"cf:c%d" % c for c in range(columns)]
    started = time.perf_counter()
    for batch_no in range(batches):
        with table.batch(timestamp=batch_no + 1) as batch:
            for i in range(ROWS_PER_BATCH):
                key = b"row%09d" % (batch_no * ROWS_PER_BATCH + i)
                batch.put(key, {q: b"value-%d" % i for q in qualifiers})
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    scanned = sum(1 for _ in table.scan(batch_size=1000))
    scan_s = time.perf_counter() - started
    rows = batches * ROWS_PER_BATCH
    assert scanned == rows, (scanned, rows)
    conn.delete_table(name, disable=True)
    conn.close()
    return {
        "transport": transport,
        "protocol": protocol,
        "rows": rows,
        "columns_per_row": columns,
        "put_rows_per_s": round(rows / write_s),
        "put_cells_per_s": round(rows * columns / write_s),
        "scan_rows_per_s": round(rows / scan_s),
        "scan_cells_per_s": round(rows * columns / scan_s),
    }


def main() -> int:
    """Parse arguments, run the benchmark, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="use a running gateway instead of starting one")
    parser.add_argument("--transport", default="buffered", choices=["buffered", "framed"])
    parser.add_argument("--protocol", default="binary", choices=["binary", "compact"])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--columns", type=int, default=5)
    args = parser.parse_args()
    if args.port:
        print(json.dumps(run(args.port, args.transport, args.protocol, args.batches, args.columns)))
        return 0
    with tempfile.TemporaryDirectory(prefix="hbase-gw-bench-") as tmp:
        process, port = start_gateway(Path(tmp), args.transport, args.protocol)
        try:
            print(json.dumps(run(port, args.transport, args.protocol, args.batches, args.columns)))
        finally:
            process.terminate()
            process.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
