"""The offset-version contract warning: when an epoch shows it broken, and its exact text."""

from __future__ import annotations

import pytest

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger.model.epoch import PartitionRange
from airflow_provider_eo.spark.driver.version_contract import offset_version_warning


def mapping(version: str, row_key: str) -> MappingSpec:
    return MappingSpec(version=version, row_key=row_key)


TWO_PARTITIONS = [PartitionRange("orders", 0, 0, 5), PartitionRange("orders", 1, 3, 4)]


def test_exact_warning_for_a_template_without_the_kafka_key_over_two_partitions() -> None:
    assert offset_version_warning(
        "p1", 42, mapping("offset", "{customer.id}:{order_id}"), TWO_PARTITIONS
    ) == (
        "pipeline=p1 epoch_id=42: cell versions are Kafka offsets, but the row key template "
        "'{customer.id}:{order_id}' does not use the Kafka key and this epoch reads 2 partitions "
        "(topics: orders): a row fed from two partitions gets versions that are unrelated offsets, so "
        "an older record can hide a newer one; fix: set 'mapping.version: field:<a monotonic field>' "
        "(an event time or a CDC log position), or key the Kafka records by row and put {key} in the "
        "row key (docs/spark.md, 'Versions from a field')"
    )


def test_several_topics_are_named_sorted_once() -> None:
    ranges = [PartitionRange("b", 0, 0, 1), PartitionRange("a", 0, 0, 1), PartitionRange("a", 1, 0, 1)]
    warning = offset_version_warning("p", 1, mapping("offset", "{id}"), ranges)
    assert warning is not None
    assert "this epoch reads 3 partitions (topics: a, b):" in warning


@pytest.mark.parametrize(
    ("version", "row_key", "ranges"),
    [
        ("field:event_ms", "{id}", TWO_PARTITIONS),  # the fix applied
        ("offset", "kafka_key", TWO_PARTITIONS),  # rows keyed by the Kafka key
        ("offset", "{key}", TWO_PARTITIONS),
        ("offset", "{region}:{key.id}", TWO_PARTITIONS),
        ("offset", "{id}", [PartitionRange("orders", 3, 0, 9)]),  # one partition
        (
            "offset",
            "{id}",
            [PartitionRange("orders", 0, 0, 9), PartitionRange("orders", 1, 4, 4)],
        ),  # one non-empty
        ("offset", "{id}", []),
    ],
)
def test_no_warning_where_the_contract_holds_or_cannot_break(
    version: str, row_key: str, ranges: list[PartitionRange]
) -> None:
    assert offset_version_warning("p", 1, mapping(version, row_key), ranges) is None
