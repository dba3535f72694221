"""The main job end to end through real Airflow, Spark, the ledger, Apache Kafka and Apache
HBase: every component real.

One module-scoped scenario drains a pipeline in two capped epochs through the stream
DAG on the session's real scheduler (``airflow_server``: runs triggered through the REST
API, tasks in LocalExecutor workers) while a scanner watches every process command line
for secrets, and snapshots HBase, the ledger and the consumer group; several tests assert
on that snapshot. The backfill tests then run further DAG runs of the same pipeline there.
The failure-policy test runs its pipeline through ``airflow dags test`` (its AIRFLOW_HOME
sets no retries: the failure ends the run at once) and the fencing test submits the Spark
application directly.
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import happybase
import pytest
import yaml

from airflow_provider_eo.config import PipelineSpec, load_pipeline
from airflow_provider_eo.dags.factory import CHUNK_GROUP_ID, backfill_dag_id, stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochKind, EpochState, Ledger
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.spark.driver import application as spark_app
from eo_devtools.demo.expected_state import ProducedRecord, expected_rows, is_bad_record
from eo_devtools.demo.sample_events import produce_records
from eo_devtools.demo.verification import verify_pipeline
from eo_devtools.ledger_direct import reserve_stream_epoch, rotate_fencing_token
from tests.airflow.asset_events import expected_extra, served_asset_events
from tests.airflow.conftest import PipelineFactory, PipelineUnderTest
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo
from tests.openlineage_events import lineage_pipeline
from tests.process_scan import SPARK_SUBMIT, CommandLineScanner
from tests.spark_startup import SPARK_SUBMIT as SPARK_SUBMIT_PATH
from tests.spark_startup import spark_conf_args

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

PARTITIONS = 2
SPLIT_SIZE = 25
Event = tuple[bytes | None, bytes | None]
TimedRows = dict[bytes, dict[bytes, tuple[bytes, int]]]
TP = tuple[str, int]


# -- data ------------------------------------------------------------------------------
def _put(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields).encode()


def first_batch() -> list[Event]:
    """Updates to the same keys, typed values, tombstones and four kinds of bad record."""
    events: list[Event] = []
    for i in range(200):
        key = f"user-{i % 16:02d}".encode()
        fields: dict[str, Any] = {"seq": i, "name": f"n{i}", "score": i * 1.5}
        if i % 3 == 0:
            fields["tags"] = ["a", i, {"x": None}]
        if i % 5 == 0:
            fields["active"] = i % 2 == 0
        events.append((key, _put(fields)))
    events += [
        (b"reborn", _put({"v": 1, "old": "gone-soon"})),
        (b"reborn", None),  # deleted ...
        (b"reborn", _put({"v": 3})),  # ... then put again: only v=3 is visible
        (b"doomed", _put({"v": 1})),
        (b"doomed", _put({"v": 2, "w": "x"})),
        (b"doomed", None),  # deleted last: the row is gone
        (b"user-03", None),  # an updated key deleted mid-stream ...
        (b"user-03", _put({"after": "tombstone"})),  # ... and re-put with other fields
        (b"bad-json", b"{not json"),
        (b"bad-utf8", b"\xff\xfe\x00 not utf-8"),
        (b"bad-array", b"[1, 2, 3]"),
        (None, _put({"no": "key"})),
    ]
    events += [(f"user-{i % 16:02d}".encode(), _put({"seq": 1000 + i, "late": True})) for i in range(40)]
    return events


def second_batch() -> list[Event]:
    """Newer values for keys of the first batch (and one more tombstone)."""
    events: list[Event] = [
        (f"user-{i:02d}".encode(), _put({"seq": 5000 + i, "name": f"new{i}"})) for i in range(16)
    ]
    events += [(b"reborn", _put({"v": 4, "extra": [1, 2]})), (b"user-07", None), (b"doomed", _put({"v": 5}))]
    return events


def ends_of(records: list[ProducedRecord]) -> dict[TP, int]:
    ends: dict[TP, int] = {}
    for r in records:
        ends[(r.topic, r.partition)] = max(ends.get((r.topic, r.partition), 0), r.offset + 1)
    return ends


# -- observation -----------------------------------------------------------------------
def timed_scan(connection: happybase.Connection, table: str) -> TimedRows:
    """Every visible cell with its version (timestamp)."""
    return {row: dict(cells) for row, cells in connection.table(table).scan(include_timestamp=True)}


def values_only(rows: TimedRows) -> dict[bytes, dict[bytes, bytes]]:
    return {row: {col: value for col, (value, _) in cells.items()} for row, cells in rows.items()}


def ranges_of(epoch: Epoch) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges]


def dead_letter_rows(ledger: Ledger, pipeline: str) -> list[tuple[Any, ...]]:
    """``(topic, partition, offset, key_b64, value_b64, error, headers)`` per dead letter (a
    replay re-records the same rows under its own epoch id, so the epoch id is left out)."""
    return [
        (d["topic"], d["partition"], d["offset"], d["key_b64"], d["value_b64"], d["error"], d["headers"])
        for d in ledger.list_dead_letters(pipeline)
    ]


def dead_letter_epochs(ledger: Ledger, pipeline: str) -> dict[tuple[str, int, int], int]:
    return {
        (d["topic"], d["partition"], d["offset"]): d["epoch_id"] for d in ledger.list_dead_letters(pipeline)
    }


BAD_REASONS = {
    b"{not json": "value is not valid JSON: ",
    b"\xff\xfe\x00 not utf-8": "value is not valid UTF-8: ",
    b"[1, 2, 3]": "JSON value is not an object (got list)",
    _put({"no": "key"}): "record has no Kafka key, needed for the row key",
}


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def secrets_of(stack: StackInfo) -> list[str]:
    """The ledger password and every full connection value handed to the write task."""
    password = urlsplit(stack.ledger_dsn).password
    assert password, "the local stack's ledger DSN has a password"
    return [password, stack.ledger_dsn, *stack.conn_env.values()]


def run_ok(pipe: PipelineUnderTest, dag_id: str, conf: dict[str, Any] | None = None) -> str:
    outcome = pipe.runner.run(dag_id, conf=conf)
    assert outcome.state == "success", outcome.log[-6000:]
    return outcome.run_id


@dataclass(frozen=True)
class Served:
    """A pipeline declared in the session's ``airflow_server``: its DAGs run on the scheduler."""

    spec: PipelineSpec
    server: AirflowServer

    @property
    def topic(self) -> str:
        return self.spec.topics[0]

    def run_ok(self, dag_id: str, conf: dict[str, Any] | None = None) -> str:
        """Trigger a run of ``dag_id`` (REST API), wait for its end and assert success; its run id."""
        run_id = self.server.trigger(dag_id, conf)
        state = self.server.wait_for_run(dag_id, run_id, timeout=600)
        assert state == "success", (dag_id, run_id, state, self.server.task_states(dag_id, run_id))
        return run_id


def serve(server: AirflowServer, pipe: PipelineUnderTest, **changes: Any) -> Served:
    """Declare ``pipe`` (its pipelines file's entry, top-level fields ``changes``d) in ``server``
    and wait until the dag-processor has parsed its stream and backfill DAGs."""
    (declaration,) = yaml.safe_load(pipe.file.read_text())["pipelines"]
    served = {**declaration, **changes}
    server.add_pipeline(served)
    name = served["name"]
    server.wait_for_dag(stream_dag_id(name))
    server.wait_for_dag(backfill_dag_id(name))
    return Served(load_pipeline(name, server.pipelines_file), server)


# -- the drained scenario ---------------------------------------------------------------
@dataclass
class Drained:
    pipe: Served
    produced: list[ProducedRecord]
    cap: int
    run_ids: list[str]
    problems: list[str]
    scan: TimedRows
    epochs: list[Epoch]
    cursors: dict[TP, int]
    group: dict[TP, int | None]
    watermarks: dict[TP, tuple[int, int]]
    dead_letters: list[tuple[Any, ...]]
    dead_letter_epochs: dict[tuple[str, int, int], int]
    scanner: CommandLineScanner
    lineage: list[dict[str, Any]]


@pytest.fixture(scope="module")
def kafka(stack: StackInfo) -> Iterator[EoKafkaHook]:
    saved = {name: os.environ.get(name) for name in stack.conn_env}
    os.environ.update(stack.conn_env)
    yield EoKafkaHook()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def drained(
    stack: StackInfo,
    airflow_server: AirflowServer,
    pipeline_factory: PipelineFactory,
    ledger: Ledger,
    hbase: happybase.Connection,
    kafka: EoKafkaHook,
) -> Drained:
    events = first_batch()
    declared = pipeline_factory(
        partitions=PARTITIONS,
        bad_records="dead_letter",
        batch_size=7,
        spark={"split_size": SPLIT_SIZE},
    )
    produced = produce_records(stack.kafka_bootstrap, declared.topic, PARTITIONS, iter(events))
    ends = ends_of(produced)
    assert len(ends) == PARTITIONS and min(ends.values()) > SPLIT_SIZE
    cap = (max(ends.values()) + 1) // 2  # exactly two epochs drain the largest partition
    cap_records = {"max_records_per_partition": cap}
    pipe = serve(airflow_server, declared, name=lineage_pipeline(declared.spec.name), caps=cap_records)

    watch = f"--pipeline\0{pipe.spec.name}\0"
    with CommandLineScanner(secrets_of(stack), watch, watch_any_of=SPARK_SUBMIT, interval=0.02) as scanner:
        run_ids = [pipe.run_ok(stream_dag_id(pipe.spec.name)) for _ in range(2)]
    spec = pipe.spec
    report = verify_pipeline(spec, produced, ledger=ledger, offsets=kafka, hbase=hbase)
    tps = sorted(ends)
    return Drained(
        pipe=pipe,
        produced=produced,
        cap=cap,
        run_ids=run_ids,
        problems=report.problems,
        scan=timed_scan(hbase, spec.hbase_table),
        epochs=ledger.epochs(EpochFilter(pipeline=spec.name)),
        cursors=ledger.cursors(spec.name),
        group=kafka.committed_offsets(spec.group_id, tps),
        watermarks=kafka.watermarks(tps),
        dead_letters=dead_letter_rows(ledger, spec.name),
        dead_letter_epochs=dead_letter_epochs(ledger, spec.name),
        scanner=scanner,
        lineage=airflow_server.lineage_events(stream_dag_id(spec.name), count=8),  # 2 x write, commit
    )


def test_multi_epoch_drain_through_the_stream_dag_is_exact(drained: Drained) -> None:
    spec = drained.pipe.spec
    ends = ends_of(drained.produced)
    assert drained.problems == []
    assert values_only(drained.scan) == expected_rows(drained.produced, "d")

    # exactly two stream epochs, each [k*cap, (k+1)*cap) clipped to the partition's end
    assert [(e.kind, e.state, e.run_id) for e in drained.epochs] == [
        (EpochKind.STREAM, EpochState.COMMITTED, run_id) for run_id in drained.run_ids
    ]
    for k, epoch in enumerate(drained.epochs):
        assert epoch.dag_id == stream_dag_id(spec.name)
        expected = [
            (t, p, min(end, k * drained.cap), min(end, (k + 1) * drained.cap))
            for (t, p), end in sorted(ends.items())
        ]
        assert ranges_of(epoch) == expected
        metrics = epoch.metrics or {}
        # a range split across several Spark tasks is read exactly once
        assert metrics["records"] == epoch.record_count
        assert metrics["tasks"] == sum(math.ceil(r.record_count / SPLIT_SIZE) for r in epoch.ranges)
        assert metrics["tasks"] > len(epoch.ranges)
        assert [
            (m["topic"], m["partition"], m["start"], m["end"], m["records"]) for m in metrics["partitions"]
        ] == [(r.topic, r.partition, r.start, r.end, r.record_count) for r in epoch.ranges]
        assert metrics["bad_records"] == sum(
            1 for r in drained.produced if is_bad_record(r) and _in(r, epoch)
        )
        assert metrics["tombstones"] == sum(
            1 for r in drained.produced if r.value is None and r.key is not None and _in(r, epoch)
        )

    # the group's offsets == the ledger cursors == the high watermarks
    assert drained.cursors == ends
    assert drained.group == ends
    assert {tp: high for tp, (_, high) in drained.watermarks.items()} == ends


def _in(record: ProducedRecord, epoch: Epoch) -> bool:
    return any(
        r.tp == (record.topic, record.partition) and r.start <= record.offset < r.end for r in epoch.ranges
    )


def test_tombstones_leave_exact_rows(drained: Drained) -> None:
    rows = values_only(drained.scan)
    assert rows[b"reborn"] == {b"d:v": b"3"}
    assert b"doomed" not in rows
    assert rows[b"user-03"] == {b"d:after": b"tombstone", b"d:seq": b"1035", b"d:late": b"true"}
    # cell versions are Kafka offsets: the re-put row's cells carry offsets after its tombstone
    reborn = next(r for r in drained.produced if r.key == b"reborn" and r.value == _put({"v": 3}))
    assert drained.scan[b"reborn"][b"d:v"][1] >= reborn.offset


def test_dead_letters_are_exact_and_counted(drained: Drained) -> None:
    bad = sorted((r for r in drained.produced if is_bad_record(r)), key=lambda r: (r.partition, r.offset))
    assert [r.value for r in bad if r.value is not None and r.value in BAD_REASONS] == [r.value for r in bad]
    assert len(bad) == 4
    rows = drained.dead_letters
    assert [row[:5] for row in rows] == [
        (r.topic, r.partition, r.offset, b64(r.key), b64(r.value)) for r in bad
    ]
    for row, record in zip(rows, bad, strict=True):
        assert record.value is not None
        assert row[5].startswith(BAD_REASONS[record.value]), row
        assert row[6] == []  # produced without headers
    # each is recorded by the epoch whose range holds it, and counted in that epoch's metrics
    owner = {
        (r.topic, r.partition, r.offset): next(e.epoch_id for e in drained.epochs if _in(r, e)) for r in bad
    }
    assert drained.dead_letter_epochs == owner
    assert [(e.metrics or {})["bad_records"] for e in drained.epochs] == [
        sum(1 for epoch_id in owner.values() if epoch_id == e.epoch_id) for e in drained.epochs
    ]
    assert sum((e.metrics or {})["bad_records"] for e in drained.epochs) == 4


def test_write_and_commit_task_instances_show_their_epoch(drained: Drained) -> None:
    """The label the UI shows per task instance (rendered map index), stored by Airflow itself
    and served by its REST API."""
    dag_id = stream_dag_id(drained.pipe.spec.name)
    for run_id, epoch in zip(drained.run_ids, drained.epochs, strict=True):
        path = f"dags/{quote(dag_id)}/dagRuns/{quote(run_id, safe='')}/taskInstances?limit=1000"
        instances = drained.pipe.server.api("GET", path)["task_instances"]
        rows = sorted((ti["task_id"], ti["rendered_map_index"]) for ti in instances)
        ranges = " ".join(f"{r.topic}[{r.partition}]=[{r.start},{r.end})" for r in epoch.ranges)
        label = f"epoch {epoch.epoch_id} stream, {epoch.record_count} records: {ranges}"
        assert rows == [("commit", label), ("recover", None), ("reserve", None), ("write", label)]


def eo_epoch_facet(epoch: Epoch, state: EpochState) -> dict[str, Any]:
    """The ``eo_epoch`` run facet docs/lineage.md promises for ``epoch`` in ``state``, spelled
    out from the ledger's epoch (its ranges, its vote's metrics)."""
    metrics = epoch.metrics or {}
    return {
        "pipeline": epoch.pipeline,
        "epochId": epoch.epoch_id,
        "kind": "stream",
        "state": state.value,
        "ranges": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "start": r.start,
                "end": r.end,
                "records": r.end - r.start,
            }
            for r in epoch.ranges
            if r.end > r.start
        ],
        "rangesOmitted": 0,
        "recordsTotal": epoch.record_count,
        "records": metrics["records"],
        "badRecords": metrics["bad_records"],
        "skippedOffsets": metrics["skipped_offsets"],
        "_schemaURL": "urn:airflow-provider-eo:openlineage:EoEpochRunFacet:1-0-0#/$defs/EoEpochRunFacet",
    }


def test_write_and_commit_report_their_epoch_to_openlineage(stack: StackInfo, drained: Drained) -> None:
    """The session's Airflow runs the OpenLineage provider with its file transport: per run, a
    START and a COMPLETE event of ``write`` and of ``commit``; the COMPLETE events name the topic
    (OpenLineage's Kafka naming) and the HBase table, and carry the epoch as the write left it
    (WRITTEN) and as the commit left it (COMMITTED): ids, ranges and counts of the ledger's rows."""
    dag_id = stream_dag_id(drained.pipe.spec.name)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for event in drained.lineage:
        by_run.setdefault(event["run"]["facets"]["airflow"]["dagRun"]["run_id"], []).append(event)
    assert sorted(by_run) == sorted(drained.run_ids)
    kafka = f"kafka://{stack.kafka_bootstrap.split(',')[0]}"
    table = {
        "namespace": f"hbase://{stack.hbase_host}:{stack.hbase_port}",
        "name": f"default:{drained.pipe.spec.hbase_table}",
    }
    for run_id, epoch in zip(drained.run_ids, drained.epochs, strict=True):
        events = sorted(by_run[run_id], key=lambda e: (e["job"]["name"], e["eventTime"]))
        assert [(e["eventType"], e["job"]["namespace"], e["job"]["name"]) for e in events] == [
            ("START", "default", f"{dag_id}.commit"),
            ("COMPLETE", "default", f"{dag_id}.commit"),
            ("START", "default", f"{dag_id}.write"),
            ("COMPLETE", "default", f"{dag_id}.write"),
        ]
        commit_start, commit, write_start, write = events
        for start in (commit_start, write_start):
            assert (start["inputs"], start["outputs"], "eo_epoch" in start["run"]["facets"]) == (
                [],
                [],
                False,
            )
        for complete, state in ((write, EpochState.WRITTEN), (commit, EpochState.COMMITTED)):
            assert [(d["namespace"], d["name"]) for d in complete["inputs"]] == [(kafka, drained.pipe.topic)]
            assert [{"namespace": d["namespace"], "name": d["name"]} for d in complete["outputs"]] == [table]
            facet = complete["run"]["facets"]["eo_epoch"]
            assert facet == {**eo_epoch_facet(epoch, state), "_producer": complete["producer"]}


def test_client_mode_keeps_secrets_off_every_command_line(drained: Drained) -> None:
    assert drained.pipe.spec.spark.deploy_mode == "client"
    assert drained.scanner.watched, "the scanner never saw spark-submit: it did not overlap the write"
    assert drained.scanner.leaks == []


def test_committed_ranges_rerun_as_backfills_leave_hbase_identical(
    drained: Drained, ledger: Ledger, hbase: happybase.Connection, kafka: EoKafkaHook
) -> None:
    """Re-running a committed epoch's exact range is byte-identical, versions included; re-running
    the whole committed history (other range boundaries, so other write segments) leaves every
    visible value identical and moves no version backwards."""
    spec = drained.pipe.spec
    ends = ends_of(drained.produced)
    before = timed_scan(hbase, spec.hbase_table)
    dead_before = dead_letter_rows(ledger, spec.name)
    cursors_before = ledger.cursors(spec.name)
    group_before = kafka.committed_offsets(spec.group_id, sorted(ends))
    topic, widest = max(ends, key=lambda tp: ends[tp])
    second = drained.epochs[1]
    (epoch_range,) = [r for r in second.ranges if r.partition == widest]

    exact = {"partitions": [widest], "start_offset": epoch_range.start, "end_offset": epoch_range.end}
    run_ids = [drained.pipe.run_ok(backfill_dag_id(spec.name), conf=exact)]
    assert timed_scan(hbase, spec.hbase_table) == before  # values and versions

    run_ids.append(drained.pipe.run_ok(backfill_dag_id(spec.name), conf={"start_offset": 0}))
    after = timed_scan(hbase, spec.hbase_table)
    assert values_only(after) == values_only(before)
    assert {(row, col) for row, cells in after.items() for col in cells} == {
        (row, col) for row, cells in before.items() for col in cells
    }
    assert all(
        after[row][col][1] >= version for row, cells in before.items() for col, (_, version) in cells.items()
    )

    backfills = ledger.epochs(
        EpochFilter(pipeline=spec.name, kind=EpochKind.BACKFILL, min_id=second.epoch_id)
    )
    assert [(e.state, e.run_id, e.dag_id) for e in backfills] == [
        (EpochState.COMMITTED, run_id, backfill_dag_id(spec.name)) for run_id in run_ids
    ]
    # each chunk's commit announced its epoch as an event of the table's Asset
    announced = served_asset_events(drained.pipe.server, backfill_dag_id(spec.name))
    assert announced == [
        (backfill_dag_id(spec.name), f"{CHUNK_GROUP_ID}.commit", expected_extra(e)) for e in backfills
    ]
    assert ranges_of(backfills[0]) == [(topic, widest, epoch_range.start, epoch_range.end)]
    assert ranges_of(backfills[1]) == [(t, p, 0, end) for (t, p), end in sorted(ends.items())]
    assert [(e.metrics or {})["records"] for e in backfills] == [epoch_range.record_count, sum(ends.values())]
    assert (backfills[1].metrics or {})["bad_records"] == 4
    assert dead_letter_rows(ledger, spec.name) == dead_before  # upserted, not duplicated
    assert ledger.cursors(spec.name) == cursors_before
    assert kafka.committed_offsets(spec.group_id, sorted(ends)) == group_before
    assert ledger.open_epochs(spec.name) == []


def test_backfill_of_an_old_range_after_newer_updates_keeps_the_newer_values(
    drained: Drained, stack: StackInfo, ledger: Ledger, hbase: happybase.Connection, kafka: EoKafkaHook
) -> None:
    spec = drained.pipe.spec
    old_ends = ends_of(drained.produced)
    newer = produce_records(stack.kafka_bootstrap, drained.pipe.topic, PARTITIONS, iter(second_batch()))
    produced = drained.produced + newer
    drained.pipe.run_ok(stream_dag_id(spec.name))
    latest = timed_scan(hbase, spec.hbase_table)
    assert values_only(latest) == expected_rows(produced, "d")
    assert values_only(latest)[b"reborn"] == {b"d:v": b"4", b"d:extra": b"[1,2]"}
    assert b"user-07" not in latest

    old_end = min(old_ends.values())
    drained.pipe.run_ok(backfill_dag_id(spec.name), conf={"start_offset": 0, "end_offset": old_end})

    after = timed_scan(hbase, spec.hbase_table)
    assert values_only(after) == values_only(latest)
    assert all(
        after[row][col][1] >= version for row, cells in latest.items() for col, (_, version) in cells.items()
    )
    backfill = ledger.epochs(EpochFilter(pipeline=spec.name, kind=EpochKind.BACKFILL, limit=1))[0]
    assert backfill.state == EpochState.COMMITTED
    assert ranges_of(backfill) == [(t, p, 0, old_end) for (t, p) in sorted(old_ends)]
    report = verify_pipeline(spec, produced, ledger=ledger, offsets=kafka, hbase=hbase)
    assert report.problems == []


# -- bad records under the `fail` policy --------------------------------------------------
def test_bad_record_under_fail_policy_fails_the_run_then_recovery_aborts_it(
    stack: StackInfo,
    pipeline_factory: PipelineFactory,
    ledger: Ledger,
    hbase: happybase.Connection,
    kafka: EoKafkaHook,
) -> None:
    pipe = pipeline_factory(partitions=1, bad_records="fail")
    events: list[Event] = [(f"k{i}".encode(), _put({"i": i})) for i in range(30)]
    events[17] = (b"k17", b"{broken")
    produced = produce_records(stack.kafka_bootstrap, pipe.topic, 1, iter(events))
    bad = produced[17]
    spec = pipe.spec

    failed = pipe.runner.run(stream_dag_id(spec.name))
    assert failed.state == "failed"
    assert f"topic {pipe.topic} partition 0 offset {bad.offset}" in failed.log
    assert "bad record" in failed.log
    (epoch,) = ledger.epochs(EpochFilter(pipeline=spec.name))
    assert (epoch.state, epoch.run_id, ranges_of(epoch)) == (
        EpochState.RESERVED,
        failed.run_id,
        [(pipe.topic, 0, 0, 30)],
    )
    assert epoch.metrics is None
    assert kafka.committed_offsets(spec.group_id, [(pipe.topic, 0)]) == {(pipe.topic, 0): None}
    assert ledger.cursors(spec.name) == {(pipe.topic, 0): 0}

    # the operator switches the pipeline to dead letters; the next run's recover aborts the old epoch
    pipe = pipe.redeclare(bad_records="dead_letter")
    run_id = run_ok(pipe, stream_dag_id(spec.name))
    aborted, committed = ledger.epochs(EpochFilter(pipeline=spec.name))
    assert (aborted.epoch_id, aborted.state) == (epoch.epoch_id, EpochState.ABORTED)
    assert ranges_of(aborted) == ranges_of(epoch)  # its range went to the next reservation
    assert (committed.state, committed.run_id, ranges_of(committed)) == (
        EpochState.COMMITTED,
        run_id,
        [(pipe.topic, 0, 0, 30)],
    )
    assert (committed.metrics or {})["bad_records"] == 1
    (row,) = dead_letter_rows(ledger, spec.name)
    assert row[:5] == (pipe.topic, 0, bad.offset, b64(b"k17"), b64(b"{broken"))
    assert row[5].startswith("value is not valid JSON: ")
    assert dead_letter_epochs(ledger, spec.name) == {(pipe.topic, 0, bad.offset): committed.epoch_id}
    report = verify_pipeline(pipe.spec, produced, ledger=ledger, offsets=kafka, hbase=hbase)
    assert report.problems == []


# -- the fenced-out vote (the Spark application directly) ---------------------------------
def _submit(
    stack: StackInfo, pipe: PipelineUnderTest, epoch_id: int, *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [
        SPARK_SUBMIT_PATH,
        "--master", "local[1]",
        *spark_conf_args(),
        str(spark_app.__file__),
        "--pipeline", pipe.spec.name,
        "--epoch-id", str(epoch_id),
        *extra,
    ]  # fmt: skip
    env = {**os.environ, **stack.conn_env, "EO_PIPELINES_FILE": str(pipe.file)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_fenced_out_write_exits_3_and_changes_nothing(
    stack: StackInfo,
    pipeline_factory: PipelineFactory,
    ledger: Ledger,
    hbase: happybase.Connection,
    kafka: EoKafkaHook,
) -> None:
    pipe = pipeline_factory(partitions=1)
    produce_records(
        stack.kafka_bootstrap, pipe.topic, 1, iter([(f"k{i}".encode(), _put({"i": i})) for i in range(12)])
    )
    spec = pipe.spec

    # an epoch aborted before its writer runs
    aborted = reserve_stream_epoch(ledger, spec, kafka, dag_id="test", run_id="fenced-1")
    assert aborted is not None
    aborted = ledger.abort(aborted.epoch_id, "test: fenced out")
    done = _submit(stack, pipe, aborted.epoch_id)
    assert done.returncode == 3, done.stdout + done.stderr
    assert ledger.get_epoch(aborted.epoch_id) == aborted

    # a writer holding a stale token after the epoch's token was rotated
    current = reserve_stream_epoch(ledger, spec, kafka, dag_id="test", run_id="fenced-2")
    assert current is not None and ranges_of(current) == [(pipe.topic, 0, 0, 12)]
    stale = current.fencing_token
    rotate_fencing_token(ledger, current.epoch_id)
    rotated = ledger.get_epoch(current.epoch_id)
    assert rotated.fencing_token != stale and rotated.state == EpochState.RESERVED
    done = _submit(stack, pipe, current.epoch_id, "--fencing-token", stale)
    assert done.returncode == 3, done.stdout + done.stderr
    assert ledger.get_epoch(current.epoch_id) == rotated
    assert timed_scan(hbase, spec.hbase_table) == {}
    assert ledger.cursors(spec.name) == {(pipe.topic, 0): 0}
    assert ledger.dead_letter_count(spec.name) == 0
    ledger.abort(current.epoch_id, "test: cleanup")
