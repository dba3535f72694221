"""Each epoch records the mapping it ran, and a writer running another one is fenced.

On the real stack (PostgreSQL, Kafka, HBase; the write step in-process as the application runs
it, naming its mapping's digest): a stream and a backfill reservation record the spec's digest
and the spec once per digest (``eo.pipeline_specs``); the pipelines YAML then changes a column
between reserve and write, so the writer runs the new mapping: it is refused before writing
(nothing in HBase, the epoch still RESERVED with no vote, the group untouched) with exactly
"epoch N was reserved with mapping <12 hex>, this writer runs <12 hex>", and a writer with the
reservation's mapping then writes and commits it. An epoch reserved before the ledger recorded
digests (its ``spec_digest`` NULL) takes any writer. ``eo-ledger epoch`` and ``eo-ledger spec``
show the digest and the spec.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace

import happybase
import pytest

from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.ledger import Ledger, PartitionRange
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import EpochRoundTrip, ledger_connection, pipeline_spec, scan
from tests.integration.ledger_support import fresh_database
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration

RECORDS = [
    ("k0", b'{"a": "x0", "b": "y0"}'),
    ("k1", b'{"a": "x1", "b": "y1"}'),
    ("k2", b'{"a": "x2", "b": "y2"}'),
]


@pytest.fixture
def trip(stack: StackInfo) -> Iterator[EpochRoundTrip]:
    table = f"specfence_{__import__('uuid').uuid4().hex[:8]}"
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(table, {"d": {"max_versions": 3}})
    hbase.close()
    with (
        created_topic(stack.kafka_bootstrap, prefix="specfence") as topic,
        fresh_database(stack.ledger_dsn) as dsn,
    ):
        produce(stack.kafka_bootstrap, topic, RECORDS, partition=0)
        env = {**stack.conn_env, "AIRFLOW_CONN_EO_LEDGER": ledger_connection(dsn)}
        spec = pipeline_spec(table, topic, table, mapping={"value_format": "json", "columns": {"a": "a"}})
        yield EpochRoundTrip(spec, dsn, env)
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.delete_table(table, disable=True)
    hbase.close()


def _spec_rows(trip: EpochRoundTrip) -> list[tuple[str, str, str]]:
    with Ledger(trip.ledger_dsn) as ledger, ledger.transaction() as cur:
        cur.execute(
            "SELECT digest, pipeline, spec->'mapping'->>'columns' FROM eo.pipeline_specs ORDER BY first_seen"
        )
        return [tuple(row) for row in cur.fetchall()]


def test_a_writer_of_a_changed_mapping_is_fenced_and_changes_nothing(
    stack: StackInfo, trip: EpochRoundTrip
) -> None:
    reserved_with = spec_digest(trip.spec)
    epoch = trip.reserve()
    assert epoch is not None and epoch.spec_digest == reserved_with
    changed = replace(trip.spec, mapping=replace(trip.spec.mapping, columns={"b": "b"}))
    runs = spec_digest(changed)
    assert runs != reserved_with

    code = trip.write(epoch.epoch_id, spec=changed)
    assert code == ExitCode.FENCED_OUT
    with Ledger(trip.ledger_dsn) as ledger:
        after = ledger.get_epoch(epoch.epoch_id)
    assert (after.state.value, after.metrics, after.written_at) == ("RESERVED", None, None)
    assert scan(stack, trip.spec.hbase_table) == {}
    assert trip.group_offsets() == {0: None}

    assert trip.write_and_commit(epoch).state.value == "COMMITTED"  # the reservation's mapping
    assert scan(stack, trip.spec.hbase_table) == {
        f"k{i}".encode(): {b"d:a": f"x{i}".encode()} for i in range(3)
    }
    assert trip.group_offsets() == {0: 3}
    assert _spec_rows(trip) == [(reserved_with, trip.spec.name, '{"a": "a"}')]


def test_the_refusal_names_both_mappings(trip: EpochRoundTrip, caplog: pytest.LogCaptureFixture) -> None:
    epoch = trip.reserve()
    assert epoch is not None
    changed = replace(trip.spec, batch_size=1)
    with caplog.at_level("ERROR", logger="airflow_provider_eo.spark.driver.write_epoch"):
        assert trip.write(epoch.epoch_id, spec=changed) == ExitCode.FENCED_OUT
    expected = (
        f"epoch {epoch.epoch_id} was reserved with mapping {spec_digest(trip.spec)[:12]}, "
        f"this writer runs {spec_digest(changed)[:12]}"
    )
    driver = "airflow_provider_eo.spark.driver.write_epoch"
    assert [r.getMessage() for r in caplog.records if r.name == driver and r.levelname == "ERROR"] == [
        f"pipeline={trip.spec.name} epoch_id={epoch.epoch_id}: {expected}: nothing written, not voted"
    ]


def test_one_spec_row_per_digest_and_backfills_record_theirs(trip: EpochRoundTrip) -> None:
    first = trip.run_stream_epoch()
    assert first is not None and first.spec_digest == spec_digest(trip.spec)
    backfill = trip.reserve_backfill([PartitionRange(trip.spec.topics[0], 0, 0, 2)])
    assert backfill.spec_digest == first.spec_digest
    trip.spec = replace(trip.spec, mapping=replace(trip.spec.mapping, columns={"a": "a", "b": "b"}))
    second = trip.reserve_backfill([PartitionRange(trip.spec.topics[0], 0, 2, 3)])
    assert second.spec_digest == spec_digest(trip.spec) != first.spec_digest
    rows = _spec_rows(trip)
    assert [(d, c) for d, _, c in rows] == [
        (first.spec_digest, '{"a": "a"}'),
        (second.spec_digest, '{"a": "a", "b": "b"}'),
    ]


def test_an_epoch_without_a_recorded_mapping_takes_any_writer(stack: StackInfo, trip: EpochRoundTrip) -> None:
    epoch = trip.reserve()
    assert epoch is not None
    with Ledger(trip.ledger_dsn) as ledger, ledger.transaction() as cur:
        cur.execute("UPDATE eo.epochs SET spec_digest = NULL WHERE epoch_id = %s", (epoch.epoch_id,))
    changed = replace(trip.spec, mapping=replace(trip.spec.mapping, columns={"b": "b"}))
    assert trip.write(epoch.epoch_id, spec=changed) == ExitCode.OK
    assert scan(stack, trip.spec.hbase_table) == {
        f"k{i}".encode(): {b"d:b": f"y{i}".encode()} for i in range(3)
    }


def test_eo_ledger_shows_the_digest_and_the_spec(trip: EpochRoundTrip) -> None:
    epoch = trip.reserve()
    assert epoch is not None
    env = {**trip.env, "PYTHONPATH": ":".join(sys.path)}

    def eo_ledger(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "airflow_provider_eo.cli.eo_ledger", "--conn-id", "eo_ledger", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, check=False)

    shown = json.loads(eo_ledger("epoch", str(epoch.epoch_id)).stdout)
    assert shown["spec_digest"] == spec_digest(trip.spec)
    spec = json.loads(eo_ledger("spec", shown["spec_digest"]).stdout)
    assert spec == {"digest": shown["spec_digest"], "spec": json.loads(json.dumps(trip.spec.to_dict()))}
    unknown = eo_ledger("spec", "0" * 64)
    assert unknown.returncode == 2 and f"no spec recorded under digest {'0' * 64!r}" in unknown.stderr
