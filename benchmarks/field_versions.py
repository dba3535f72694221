"""Field versions vs offset versions: the write step's tasks on the same records, same run.

``python -m benchmarks.field_versions --state-dir DIR [--records N] [--rounds R]`` on a running
local stack. The benchmark's JSON events (``N``, default 100,000, over 2 partitions) are
written by the write step's own task code (``run_task``, in this process, no Spark: the
Thrift calls are what differs) into a fresh table per run, with the default settings
(``batch_size`` 400 or ``batch_bytes`` 4 MiB per segment), under these version sources:

* ``offset``: the default, one ``mutateRowsTs`` per segment;
* ``field_distinct``: every record has its own version (a CDC log position, or event
  times in ms at under 1,000 records/s): one call per record;
* ``field_per_10`` / ``field_per_100``: 10 / 100 consecutive records share a version
  (event times in ms at 10,000 / 100,000 records/s): one call per distinct version.

The field version is set on the mapped put from the record's offset (the mapping helper
reads it from a field; that read costs the same for every version source). Rounds alternate
the variants; the median wall time of each counts. Prints one JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.spark.driver.task_settings import task_settings
from airflow_provider_eo.spark.hbase_sink import hbase_writer
from airflow_provider_eo.spark.hbase_sink.segments import WriteCall
from airflow_provider_eo.spark.records import KafkaRecord, RowMutation, RowPut, TaskRange
from airflow_provider_eo.spark.task import write_task
from benchmarks.cpu_components import server_processes
from benchmarks.dataset import delete_topic, produce_dataset
from benchmarks.process_meter import cpu_seconds
from benchmarks.write_step import drop_table, fresh_table
from eo_devtools.stack.stack import LocalStack

PARTITIONS = 2
BASE_VERSION = 1_764_000_000_000  # epoch milliseconds of late 2025
#: variant -> records per version (None: offset versions)
VARIANTS: dict[str, int | None] = {
    "offset": None,
    "field_distinct": 1,
    "field_per_10": 10,
    "field_per_100": 100,
}


class OffsetDerivedFieldVersion:
    """The real mapper, its puts given the version ``BASE_VERSION + offset // per``."""

    def __init__(self, mapper: Any, per: int) -> None:
        self.mapper = mapper
        self.per = per

    def map(self, record: KafkaRecord) -> RowMutation:
        mutation = self.mapper.map(record)
        assert isinstance(mutation, RowPut)
        return RowPut(mutation.row, mutation.cells, BASE_VERSION + record.offset // self.per)


def mapper_factory(per: int | None) -> Callable[..., Any]:
    real = write_task.build_mapper
    if per is None:
        return real
    return lambda *args, **kwargs: OffsetDerivedFieldVersion(real(*args, **kwargs), per)


def one_run(stack: LocalStack, topic: str, ends: tuple[int, ...], per: int | None) -> dict[str, Any]:
    """Write every partition's range once into a fresh table: wall seconds, this process's CPU
    seconds, the stack servers' CPU seconds (shared with whatever else uses the stack), and
    the counts of cells, segments and ``mutateRowsTs`` calls."""
    table = fresh_table(stack, "bench_fv")
    entry = {"name": table, "topics": [topic], "hbase": {"table": table}}
    spec = parse_pipelines_text(json.dumps({"pipelines": [entry]}), "<bench>")[table]
    settings = task_settings(spec, 1)
    real_mapper, real_send = write_task.build_mapper, hbase_writer.mutate_rows_ts
    calls = 0

    def counted(
        client: Any, table_name: bytes, call: WriteCall, heads: dict[bytes, bytes] | None = None
    ) -> None:
        nonlocal calls
        calls += 1
        real_send(client, table_name, call, heads)

    write_task.build_mapper = mapper_factory(per)
    hbase_writer.mutate_rows_ts = counted
    servers = list(server_processes(stack).values())
    try:
        server_before, cpu_before, started = cpu_seconds(servers), time.process_time(), time.monotonic()
        metrics = [write_task.run_task(settings, TaskRange(topic, p, 0, end)) for p, end in enumerate(ends)]
        seconds = time.monotonic() - started
        client_cpu, server_cpu = time.process_time() - cpu_before, cpu_seconds(servers) - server_before
    finally:
        write_task.build_mapper, hbase_writer.mutate_rows_ts = real_mapper, real_send
        drop_table(stack, table)
    return {
        "seconds": round(seconds, 2),
        "client_cpu_s": round(client_cpu, 2),
        "server_cpu_s": round(server_cpu, 2),
        "cells": sum(m.cells_written for m in metrics),
        "segments": sum(m.segments for m in metrics),
        "calls": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    stack = LocalStack(args.state_dir)
    os.environ.update(stack.conn_env())
    dataset = produce_dataset(stack.kafka_bootstrap, args.records, PARTITIONS)
    names = args.variants.split(",")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    try:
        for _ in range(args.rounds):
            for name in names:
                runs[name].append(one_run(stack, dataset.topic, dataset.ends, VARIANTS[name]))
                print(name, runs[name][-1], flush=True)
    finally:
        delete_topic(stack.kafka_bootstrap, dataset.topic)
    medians = {
        figure: {name: statistics.median(r[figure] for r in runs[name]) for name in names}
        for figure in ("seconds", "client_cpu_s", "server_cpu_s")
    }
    report: dict[str, Any] = {
        "records": dataset.records,
        "partitions": PARTITIONS,
        "rounds": args.rounds,
        "load_average_1m_at_end": os.getloadavg()[0],
        "medians": medians,
        "calls": {name: runs[name][0]["calls"] for name in names},
        "records_per_s": {name: round(dataset.records / s) for name, s in medians["seconds"].items()},
        "runs": runs,
    }
    if "offset" in names:
        report["slowdown_vs_offset"] = {
            figure: {name: round(value / values["offset"], 2) for name, value in values.items()}
            for figure, values in medians.items()
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
