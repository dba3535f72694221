"""The dead-letter buffer of a write task: flushed by count and by bytes."""

from __future__ import annotations

from airflow_provider_eo.ledger.models import DeadLetter
from airflow_provider_eo.spark.dead_letters import BadRecordHandler
from airflow_provider_eo.spark.records import KafkaRecord


def test_buffer_is_flushed_when_its_raw_bytes_reach_the_bound() -> None:
    flushed: list[list[int]] = []

    def sink(rows: list[DeadLetter]) -> None:
        flushed.append([row.offset for row in rows])

    handler = BadRecordHandler("p", 7, "dead_letter", sink, flush_every=100, flush_bytes=2500)
    for offset, size in enumerate((1000, 1000, 600, 3000, 10)):
        handler.handle(KafkaRecord("t", 0, offset, b"k", b"v" * (size - 1)), "too big")
    assert flushed == [[0, 1, 2], [3]]  # 2600 bytes, then a record alone over the bound
    handler.flush()
    assert flushed == [[0, 1, 2], [3], [4]]
    assert (handler.count, handler.pending, handler.pending_bytes) == (5, [], 0)
