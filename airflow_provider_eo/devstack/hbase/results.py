"""Conversion of cells into the Thrift result structs happybase reads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from airflow_provider_eo.devstack.hbase.idl import hbase_thrift
from airflow_provider_eo.devstack.hbase.model import Cell, FamilySpec


def tcells(cells: Iterable[Cell]) -> list[Any]:
    """``list<TCell>`` in cell order (getVer / getVerTs)."""
    return [hbase_thrift.TCell(value=c.value, timestamp=c.ts) for c in cells]


def row_result(row: bytes, cells: list[Cell], sort_columns: bool = False) -> Any:
    """A ``TRowResult``: ``columns`` map, or ``sortedColumns`` list in byte order when asked.

    As HBase's ``rowResultFromHBase``: in the map a later version of the same
    column replaces an earlier one.
    """
    if sort_columns:
        sorted_columns = [
            hbase_thrift.TColumn(columnName=c.column, cell=hbase_thrift.TCell(value=c.value, timestamp=c.ts))
            for c in cells
        ]
        return hbase_thrift.TRowResult(row=row, sortedColumns=sorted_columns)
    columns = {c.column: hbase_thrift.TCell(value=c.value, timestamp=c.ts) for c in cells}
    return hbase_thrift.TRowResult(row=row, columns=columns)


def column_descriptor(spec: FamilySpec) -> Any:
    """A ``ColumnDescriptor`` as HBase's ``colDescFromHbase`` returns it (name ends with ``:``)."""
    return hbase_thrift.ColumnDescriptor(
        name=spec.name + b":",
        maxVersions=spec.max_versions,
        compression=spec.compression,
        inMemory=spec.in_memory,
        bloomFilterType=spec.bloom_filter_type,
        bloomFilterVectorSize=spec.bloom_filter_vector_size,
        bloomFilterNbHashes=spec.bloom_filter_nb_hashes,
        blockCacheEnabled=spec.block_cache_enabled,
        timeToLive=spec.time_to_live,
    )
