"""What every freshness run reports, whatever committed its records (epochs under Airflow,
Structured Streaming's micro-batches): the records checked in HBase, then their freshness.

:func:`run_report` counts the table's rows and cells (each record has its own row key, so
``rows == records`` and ``cells == records x cells per record`` say every produced record
landed; the ledger's or the checkpoint's ranges hold exactly the produced offsets and,
matched by :func:`benchmarks.freshness_figures.match_records`, each record in exactly one
commit), raises :class:`RecordsCheckError` when they do not add up, and summarizes the warm-up's
records and the measured ones apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import happybase

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.spark.records import KafkaRecord, RowPut
from airflow_provider_eo.spark.task.mapping import build_mapper
from benchmarks.freshness_figures import Commit, ProducedRecord, freshness_summary, match_records
from benchmarks.steady_producer import record
from eo_devtools.stack.stack import LocalStack

FAMILY = "d"


class RecordsCheckError(RuntimeError):
    """The table's rows or cells are not the produced records'."""


def cells_per_record() -> int:
    """Cells the default mapping makes of one of the steady producer's records."""
    key, value = record(0)
    mutation = build_mapper(MappingSpec(), FAMILY).map(KafkaRecord("t", 0, 0, key, value))
    assert isinstance(mutation, RowPut)
    return len(mutation.cells)


def create_table(stack: LocalStack, name: str) -> None:
    """An empty HBase table ``name`` with family :data:`FAMILY`."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.create_table(name, {FAMILY: {}})
    finally:
        connection.close()


def count_cells(stack: LocalStack, table: str) -> tuple[int, int]:
    """Rows and cells (newest versions) of ``table``."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    rows = cells = 0
    try:
        for _, columns in connection.table(table).scan(batch_size=2000):
            rows += 1
            cells += len(columns)
    finally:
        connection.close()
    return rows, cells


def run_report(
    stack: LocalStack,
    table: str,
    warmup: Sequence[ProducedRecord],
    measured: Sequence[ProducedRecord],
    commits: Sequence[Commit],
) -> dict[str, Any]:
    """``{"measured", "warmup", "checked"}`` of one run (module docstring); raises
    :class:`RecordsCheckError` or :class:`benchmarks.freshness_figures.MatchError`."""
    produced = len(warmup) + len(measured)
    rows, cells = count_cells(stack, table)
    expected_cells = produced * cells_per_record()
    if rows != produced or cells != expected_cells:
        raise RecordsCheckError(
            f"{table}: {rows} rows and {cells} cells for {produced} records ({expected_cells} cells expected)"
        )
    held = sum(commit.records for commit in commits)
    if held != produced:
        raise RecordsCheckError(f"{table}: the commits hold {held} offsets for {produced} records")
    return {
        "measured": freshness_summary(match_records(measured, commits)),
        "warmup": freshness_summary(match_records(warmup, commits)),
        "checked": {
            "records": produced,
            "rows": rows,
            "cells": cells,
            "offsets_in_commits": held,
        },
    }
