"""One HBase row fed from two partitions, on real Kafka and HBase: offset versions show the
hazard, a field version makes the newest value win.

Row ``r`` (row key template ``{id}``, not the Kafka key) gets its newest value ``new``
(``event_ms`` 2000) at offset 0 of partition 0, and an older value ``old`` (``event_ms``
1000) at offset 3 of partition 1, after three other rows. One stream epoch reads both
partitions into each of two tables:

* offset versions (the default): partition 1's segment is version 3, partition 0's is
  version 0, so HBase shows the older ``old`` at version 3; the driver warns once, naming
  the fix; replaying partition 0 as a backfill changes nothing;
* field versions (``event_ms``): every cell is written at its record's ``event_ms``; ``new``
  at 2000 wins, also after partition 1 is replayed (the older record arriving last).

The field pipeline declares ``mapping.version: field:event_ms``; its epoch logs no warning.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator

import happybase
import pytest

from airflow_provider_eo.ledger import PartitionRange
from airflow_provider_eo.spark.driver.version_contract import offset_version_warning
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import EpochRoundTrip, ledger_connection, pipeline_spec
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import RecordSender, created_topic

pytestmark = pytest.mark.integration

Cells = dict[bytes, tuple[bytes, int]]  # column -> (value, version)


def record(row: str, name: str, event_ms: int) -> bytes:
    return json.dumps({"id": row, "name": name, "event_ms": event_ms}).encode()


PARTITION_0 = [("dev-a", record("r", "new", 2000))]
PARTITION_1 = [
    ("dev-b", record("f0", "x0", 10)),
    ("dev-b", record("f1", "x1", 11)),
    ("dev-b", record("f2", "x2", 12)),
    ("dev-b", record("r", "old", 1000)),
]


def cells(name: str, event_ms: int, version: int, row: str = "r") -> Cells:
    return {
        b"d:id": (row.encode(), version),
        b"d:name": (name.encode(), version),
        b"d:event_ms": (str(event_ms).encode(), version),
    }


@pytest.fixture(scope="module")
def setup(stack: StackInfo) -> Iterator[tuple[str, dict[str, EpochRoundTrip], happybase.Connection]]:
    suffix = uuid.uuid4().hex[:8]
    tables = {source: f"fv_{source}_{suffix}" for source in ("offset", "field")}
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    for table in tables.values():
        hbase.create_table(table, {"d": {}})
    with (
        created_topic(stack.kafka_bootstrap, partitions=2, prefix="fv") as topic,
        fresh_database(stack.ledger_dsn) as dsn,
    ):
        sender = RecordSender(stack.kafka_bootstrap)
        for partition, records in ((0, PARTITION_0), (1, PARTITION_1)):
            for key, value in records:
                sender.send(topic, key, value, partition=partition)
        sender.flush()
        env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
        versions = {"offset": "offset", "field": "field:event_ms"}
        trips = {
            source: EpochRoundTrip(
                pipeline_spec(table, topic, table, mapping={"row_key": "{id}", "version": versions[source]}),
                dsn,
                env,
            )
            for source, table in tables.items()
        }
        yield topic, trips, hbase
    for table in tables.values():
        hbase.delete_table(table, disable=True)
    hbase.close()


def row(hbase: happybase.Connection, trip: EpochRoundTrip, key: str) -> Cells:
    return dict(hbase.table(trip.spec.hbase_table).row(key.encode(), include_timestamp=True))


def test_one_row_from_two_partitions_offset_versions_show_the_hazard_field_versions_do_not(
    setup: tuple[str, dict[str, EpochRoundTrip], happybase.Connection],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic, trips, hbase = setup
    offsets, fields = trips["offset"], trips["field"]

    with caplog.at_level(logging.WARNING, logger="airflow_provider_eo.spark.driver.write_epoch"):
        epoch = offsets.run_stream_epoch()
    assert epoch is not None
    ranges = [PartitionRange(topic, 0, 0, 1), PartitionRange(topic, 1, 0, 4)]
    assert [
        r.getMessage() for r in caplog.records if "cell versions are Kafka offsets" in r.getMessage()
    ] == [offset_version_warning(offsets.spec.name, epoch.epoch_id, offsets.spec.mapping, ranges)]
    stale = cells("old", 1000, 3)  # partition 1's segment [0, 3] is version 3; partition 0's is version 0
    assert row(hbase, offsets, "r") == stale
    assert [row(hbase, offsets, f"f{i}") for i in range(3)] == [
        cells(f"x{i}", 10 + i, 3, f"f{i}") for i in range(3)
    ]
    offsets.write_and_commit(
        offsets.reserve_backfill([PartitionRange(topic, 0, 0, 1)])
    )  # the newer record again
    assert row(hbase, offsets, "r") == stale  # still hidden: version 0 < 3

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="airflow_provider_eo.spark.driver.write_epoch"):
        assert fields.run_stream_epoch() is not None
    assert [
        r.getMessage() for r in caplog.records if "cell versions are Kafka offsets" in r.getMessage()
    ] == []
    newest = cells("new", 2000, 2000)
    assert row(hbase, fields, "r") == newest
    assert [row(hbase, fields, f"f{i}") for i in range(3)] == [
        cells(f"x{i}", 10 + i, 10 + i, f"f{i}") for i in range(3)
    ]
    fields.write_and_commit(
        fields.reserve_backfill([PartitionRange(topic, 1, 0, 4)])
    )  # the older record last
    assert row(hbase, fields, "r") == newest
