"""Spark's own Kafka source as the write step's peer: one measured run, and the cells check.

:func:`run_peer` runs :mod:`benchmarks.spark_native_app` with one peer (``batch`` or
``available_now``) on a dataset, through :func:`benchmarks.spark_submit_run.measured_submit`
like the write step: same master, ``spark.ui.enabled=false`` like the write step, every
other setting Spark's default, Spark's Kafka connector from the JVM cache as ``--jars``.
:func:`check_same_cells` proves, on a small dataset, that both peers leave exactly the
cells the write step leaves, so the timed runs compare equal work.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import happybase

from benchmarks import spark_native_app
from benchmarks.dataset import Dataset
from benchmarks.spark_submit_run import SubmitRun, measured_submit
from benchmarks.write_step import drop_table, fresh_table, run_write_step
from eo_devtools.stack.jvm_artifacts import jar_list
from eo_devtools.stack.stack import LocalStack

Cells = dict[bytes, dict[bytes, bytes]]
"""row -> column -> value: the newest version of every cell of a table."""


def submit_peers(
    stack: LocalStack,
    dataset: Dataset,
    peers: Sequence[tuple[str, str]],
    *,
    master: str,
    conf: Mapping[str, str] | None = None,
) -> tuple[SubmitRun, list[dict[str, Any]]]:
    """One spark-submit of the peers app writing ``dataset`` with each ``(peer, table)`` in
    turn; the run and its ``EO-PEER`` lines, decoded. Raises RuntimeError when the app fails
    or a peer wrote another number of records than the dataset holds."""
    argv = ["--master", master, "--conf", "spark.ui.enabled=false"]
    for key, value in (conf or {}).items():
        argv += ["--conf", f"{key}={value}"]
    argv += ["--jars", ",".join(str(jar) for jar in jar_list("spark-kafka"))]
    with tempfile.TemporaryDirectory(prefix="eo-bench-checkpoints-") as checkpoints:
        argv += [
            str(spark_native_app.__file__),
            "--bootstrap", stack.kafka_bootstrap,
            "--topic", dataset.topic,
            "--ends", ",".join(str(end) for end in dataset.ends),
            "--hbase-host", stack.hbase_host,
            "--hbase-port", str(stack.hbase_port),
            "--checkpoint-root", checkpoints,
        ]  # fmt: skip
        for peer, table in peers:
            argv += ["--peer", f"{peer}={table}"]
        label = "+".join(peer for peer, _ in peers)
        run = measured_submit(stack, argv, label, marker=spark_native_app.MARKER)
    lines = [json.loads(line.split(" ", 1)[1]) for line in run.marked]
    for line in lines:
        if line["kind"] == "peer" and line["records"] != dataset.records:
            raise RuntimeError(f"{line['peer']}: wrote {line['records']} records, expected {dataset.records}")
    if [line["peer"] for line in lines if line["kind"] == "peer"] != [peer for peer, _ in peers]:
        raise RuntimeError(f"{label}: the app reported {lines}, expected a line per peer\n{run.tail}")
    return run, lines


def run_peer(
    stack: LocalStack, dataset: Dataset, peer: str, *, master: str = "local[2]", keep_table: bool = False
) -> dict[str, Any]:
    """Write ``dataset`` once with ``peer`` into a fresh table.

    Returns :meth:`SubmitRun.figures <benchmarks.spark_submit_run.SubmitRun.figures>` plus
    ``tasks_records_per_s`` (records over the app's SparkSession start to stop, as the write
    step's counts its SparkContext and tasks), ``read_write_s`` (the peer's read and write
    alone; ``micro_batches`` too for ``available_now``) and ``table`` (dropped unless
    ``keep_table``).
    """
    table = fresh_table(stack, f"bench_{peer}")
    run, lines = submit_peers(stack, dataset, [(peer, table)], master=master)
    (written,) = [line for line in lines if line["kind"] == "peer"]
    (app,) = [line for line in lines if line["kind"] == "app"]
    result = run.figures(dataset.records, dataset.megabytes)
    result["tasks_records_per_s"] = round(dataset.records / app["spark_s"])
    result["read_write_s"] = round(written["seconds"], 2)
    if "micro_batches" in written:
        result["micro_batches"] = written["micro_batches"]
    result["table"] = table
    if not keep_table:
        drop_table(stack, table)
    return result


def table_cells(stack: LocalStack, table: str) -> Cells:
    """Every row of ``table`` with the newest version of each of its cells."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return {row: dict(cells) for row, cells in connection.table(table).scan(batch_size=1000)}
    finally:
        connection.close()


def first_difference(expected: Cells, actual: Cells) -> str | None:
    """The first row (in key order) whose cells differ, described; None when equal."""
    for row in sorted(expected.keys() | actual.keys()):
        if expected.get(row) != actual.get(row):
            return f"row {row!r}: write step {expected.get(row)!r}, peer {actual.get(row)!r}"
    return None


def check_same_cells(
    stack: LocalStack, dataset: Dataset, *, master: str = "local[2]", conf: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Write ``dataset`` (keep it small: every cell is compared in memory) with the write step
    and with both peers (one spark-submit), each into a fresh table, and compare every cell.

    Returns ``{"records", "rows", "cells", "batch", "available_now"}`` (the peers' entries
    True: same cells). Raises RuntimeError naming the first differing row otherwise.
    """
    step = run_write_step(
        stack, dataset, master=master, conf=dict(conf or {}), label="cells_check", keep_table=True
    )
    tables = {peer: fresh_table(stack, f"bench_check_{peer}") for peer in spark_native_app.PEERS}
    try:
        submit_peers(stack, dataset, list(tables.items()), master=master, conf=conf)
        expected = table_cells(stack, step["table"])
        result: dict[str, Any] = {
            "records": dataset.records,
            "rows": len(expected),
            "cells": sum(len(cells) for cells in expected.values()),
        }
        for peer, table in tables.items():
            difference = first_difference(expected, table_cells(stack, table))
            if difference is not None:
                raise RuntimeError(f"{peer} peer's cells differ from the write step's: {difference}")
            result[peer] = True
        return result
    finally:
        for table in [step["table"], *tables.values()]:
            drop_table(stack, table)
