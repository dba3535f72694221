"""The writer thread in front of HBase (``SegmentPipeline``), against Apache HBase (Thrift1).

Exact cells after many segments written through the thread; the first failing segment
stops the thread, its error reaches the task's thread unchanged, and no later segment
is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import happybase
import pytest

from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter, UnsafeColumnFamilyError
from airflow_provider_eo.spark.hbase_sink.segments import Segment
from airflow_provider_eo.spark.task.segment_pipeline import SegmentPipeline
from tests.conftest import StackInfo

pytestmark = pytest.mark.integration


@pytest.fixture
def table(stack: StackInfo) -> Iterator[str]:
    name = f"sp_{uuid.uuid4().hex[:10]}"
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    conn.create_table(name, {"cf": {"max_versions": 1}})
    yield name
    conn.delete_table(name, disable=True)
    conn.close()


def segment(offset: int, row: bytes, value: bytes, family: bytes = b"cf") -> Segment:
    return Segment(offset, offset, 1, puts={row: {family + b":v": value}})


def cells(stack: StackInfo, table: str) -> dict[bytes, tuple[bytes, int]]:
    conn = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        rows = conn.table(table).scan(include_timestamp=True)
        return {row: data[b"cf:v"] for row, data in rows}
    finally:
        conn.close()


def test_segments_are_written_in_order_with_their_versions(stack: StackInfo, table: str) -> None:
    writer = SegmentWriter({"host": stack.hbase_host, "port": stack.hbase_port}, table)
    written: list[int] = []
    writes = SegmentPipeline(writer, depth=2, after_write=lambda s: written.append(s.last_offset))
    for offset in range(200):
        writes.submit(segment(offset, f"r{offset % 7}".encode(), f"v{offset}".encode()))
    writes.finish()
    writer.close()
    assert written == list(range(200))
    # the last record of each row wins, at its own offset as version
    assert cells(stack, table) == {
        f"r{row}".encode(): (f"v{last}".encode(), last)
        for row in range(7)
        for last in [max(o for o in range(200) if o % 7 == row)]
    }


def test_first_failure_stops_the_writes_and_reaches_the_task(stack: StackInfo, table: str) -> None:
    writer = SegmentWriter({"host": stack.hbase_host, "port": stack.hbase_port}, table, attempts=1)
    writes = SegmentPipeline(writer, depth=1)
    writes.submit(segment(0, b"before", b"ok"))
    writes.submit(segment(1, b"bad", b"x", family=b"nofamily"))
    with pytest.raises(UnsafeColumnFamilyError, match="has no column family 'nofamily'"):
        for offset in range(2, 50):  # raised by a submit once the thread has failed, or by finish
            writes.submit(segment(offset, b"after", b"lost"))
        writes.finish()
    writes.close()
    writer.close()
    assert cells(stack, table) == {b"before": (b"ok", 0)}
