"""The dead-letter buffer of a write task: flushed by count and by bytes; what a letter carries."""

from __future__ import annotations

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger.model.epoch import DeadLetter
from airflow_provider_eo.spark.records import KafkaRecord
from airflow_provider_eo.spark.task.bad_records import BadRecordHandler
from airflow_provider_eo.spark.task.task_schemas import registry_schema_id


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


def test_a_dead_letter_carries_error_class_timestamp_and_schema_id() -> None:
    rows: list[DeadLetter] = []
    handler = BadRecordHandler("p", 7, "dead_letter", rows.extend)
    record = KafkaRecord("t", 1, 5, b"k", b"\x00\x00\x00\x00\x2a{", (("h", b"x"),), timestamp_ms=1234)
    handler.handle(record, "value: truncated", error_class="BadRecord", schema_id=42)
    handler.flush()
    assert rows == [
        DeadLetter(
            "p", "t", 1, 5, 7, "value: truncated", b"k", b"\x00\x00\x00\x00\x2a{", [("h", b"x")],
            error_class="BadRecord", timestamp=1234, schema_id=42,
        )
    ]  # fmt: skip


def test_the_schema_id_of_a_bad_record_comes_from_its_framed_value_else_its_key() -> None:
    framed, unframed = b"\x00\x00\x00\x01\x00rest", b"{}"
    avro = MappingSpec(value_format="avro", key_format="protobuf")
    assert registry_schema_id(avro, KafkaRecord("t", 0, 0, None, framed)) == 256
    assert registry_schema_id(avro, KafkaRecord("t", 0, 0, b"\x00\x00\x00\x00\x07", unframed)) == 7
    assert registry_schema_id(avro, KafkaRecord("t", 0, 0, b"k", b"\x00\x00")) is None  # cut short
    assert registry_schema_id(MappingSpec(), KafkaRecord("t", 0, 0, framed, framed)) is None  # json, bytes
