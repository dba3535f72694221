"""The README's main command, ``python -m eo_devtools.demo``, end to end on the session's stack
and its real Airflow (``airflow_server``), with small event counts; its JSON report asserted
exactly. The write and commit tasks of its runs report OpenLineage (the session's Airflow
has the file transport on): the backfill chunks' events are asserted here.

The demo runs as ``scripts/demo.sh`` runs it, a ``python -m eo_devtools.demo`` process, with
``--airflow-home``/``--dags-folder`` naming the session's Airflow instead of starting the
stack's own (what the suite has no time for). Its four pipelines are those of
``dags/pipelines.yaml``, renamed with a uuid suffix (name, topics, group, table, dead-letter
topic: fresh on any stack, a reused one too), their Spark settings left as the file has them
(the write step's start-up defaults apply, as for a user of the demo; the last one,
``demo_events_session``, in session mode). The demo starts the stack's Spark Connect server for
that one and gives the session Airflow its ``spark_connect`` connection; on a reused stack the
server is stopped again afterwards when the demo started it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eo.dags.factory import backfill_dag_id, stream_dag_id
from airflow_provider_eo.ledger import EpochKind, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from eo_devtools.demo.avro_events import BAD_KINDS, order_events
from eo_devtools.demo.cdc_events import change_events
from eo_devtools.demo.expected_state import ProducedRecord, fold_rows
from eo_devtools.demo.feeds import avro_feed, cdc_feed, json_feed
from eo_devtools.demo.pipeline_demo import REPLAY_OFFSETS
from eo_devtools.demo.sample_events import BAD_VALUES, sample_events
from eo_devtools.demo.topic_records import read_topic
from eo_devtools.stack.stack import LocalStack
from tests.airflow_server import AirflowServer
from tests.conftest import StackInfo, is_throwaway
from tests.openlineage_events import lineage_pipeline

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
JSON_EVENTS = 200  # 4 bad records, 3 tombstones
AVRO_EVENTS = 200  # every kind: v1, v2, tombstones, no magic byte, unknown schema id, cut short
CDC_EVENTS = 200  # snapshot, inserts, updates, deletes with tombstones, a re-snapshot, bad events
SESSION_EVENTS = 100  # the JSON sample's first 100: 1 bad record, 1 tombstone
PARTITIONS = 2


@dataclass(frozen=True)
class DemoRun:
    report: dict[str, Any]
    declared: dict[str, dict[str, Any]]  # "json" / "avro" / "cdc" / "session" -> the served declaration
    wall_s: float
    stdout: str


def _renamed(entry: dict[str, Any], tag: str) -> dict[str, Any]:
    renamed = {
        **entry,
        "name": lineage_pipeline(f"{entry['name']}_{tag}"),  # its write and commit tasks emit lineage
        "topics": [f"{t}_{tag}" for t in entry["topics"]],
        "group_id": f"{entry['group_id']}-{tag}",
        "hbase": {**entry["hbase"], "table": f"{entry['hbase']['table']}_{tag}"},
    }
    if "dead_letters" in entry:
        renamed["dead_letters"] = {"topic": f"{entry['dead_letters']['topic']}_{tag}"}
    return renamed


def _report(stdout: str) -> dict[str, Any]:
    """The JSON report: the lines from the first ``{`` line to the first ``}`` line."""
    lines = stdout.splitlines()
    start = lines.index("{")
    end = lines.index("}", start)
    report: dict[str, Any] = json.loads("\n".join(lines[start : end + 1]))
    return report


@pytest.fixture(scope="module")
def demo_run(stack: StackInfo, airflow_server: AirflowServer) -> Iterator[DemoRun]:
    tag = uuid.uuid4().hex[:8]
    repository = yaml.safe_load((REPO / "dags" / "pipelines.yaml").read_text())["pipelines"]
    json_entry, avro_entry, cdc_entry, session_entry = (_renamed(e, tag) for e in repository)
    for entry in (json_entry, avro_entry, cdc_entry, session_entry):
        airflow_server.add_pipeline(entry)
    local = LocalStack(stack.state_dir)
    connect_was_running = local.spark_connect_port is not None
    argv = [
        sys.executable, "-m", "eo_devtools.demo",
        "--state-dir", str(stack.state_dir),
        "--airflow-home", str(airflow_server.home),
        "--dags-folder", str(airflow_server.dags_folder),
        "--pipeline", json_entry["name"],
        "--avro-pipeline", avro_entry["name"],
        "--cdc-pipeline", cdc_entry["name"],
        "--session-pipeline", session_entry["name"],
        "--session-events", str(SESSION_EVENTS),
        "--cdc-events", str(CDC_EVENTS),
        "--events", str(JSON_EVENTS),
        "--avro-events", str(AVRO_EVENTS),
        "--partitions", str(PARTITIONS),
        "--max-runs", "2",
    ]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=900, check=False, env=dict(os.environ)
        )
    finally:
        if not connect_was_running and not is_throwaway(stack):
            local.spark_connect_down()
    wall = time.monotonic() - started
    print(f"demo: {wall:.1f} s wall")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    declared = {"json": json_entry, "avro": avro_entry, "cdc": cdc_entry, "session": session_entry}
    yield DemoRun(_report(done.stdout), declared, wall, done.stdout)


def _figures(
    records: list[ProducedRecord], rows: dict[bytes, dict[bytes, bytes]], bad: int
) -> dict[str, Any]:
    return {
        "records_produced": len(records),
        "hbase_rows": len(rows),
        "hbase_cells": sum(len(cells) for cells in rows.values()),
        "epochs_committed": 1,
        "dead_letters": bad,
        "bad_records_produced": bad,
        "lag": 0,
        "problems": [],
        "ok": True,
    }


def _audit(records: list[ProducedRecord], is_bad: Callable[[ProducedRecord], bool]) -> dict[str, Any]:
    """The closing audit's summary: the stream epoch's offsets and the backfill's replay of
    partition 0's first offsets (their bad records counted again), clean."""
    replayed = [r for r in records if r.partition == 0 and r.offset < REPLAY_OFFSETS]
    offsets = len(records) + len(replayed)
    bad = sum(map(is_bad, records)) + sum(map(is_bad, replayed))
    return {
        "verdict": "clean",
        "discrepancies": 0,
        "epochs": 2,
        "offsets": offsets,
        "records_written": offsets - bad,
        "dead_letters": bad,
    }


def test_the_demo_report_is_exact(stack: StackInfo, demo_run: DemoRun) -> None:
    """Every figure of the report: each pipeline drained in one stream run (its cap is 2,000
    records), every bad record dead-lettered (and published once to the JSON pipeline's
    dead-letter topic), HBase holding exactly what the records fold into, and the closing
    ``eo-ledger audit`` of each pipeline's two epochs (the stream's and the backfill's) clean;
    the session-mode pipeline as exactly as the submit-mode ones."""
    declared_json, declared_avro = demo_run.declared["json"], demo_run.declared["avro"]
    json_topic, avro_topic = declared_json["topics"][0], declared_avro["topics"][0]
    json_records = read_topic(stack.kafka_bootstrap, json_topic, PARTITIONS)
    avro_records = read_topic(stack.kafka_bootstrap, avro_topic, PARTITIONS)
    json_bad = sum(1 for _, value in sample_events(JSON_EVENTS) if value in BAD_VALUES)
    avro_bad = sum(1 for event in order_events(AVRO_EVENTS) if event.kind in BAD_KINDS)
    assert (len(json_records), json_bad, len(avro_records), avro_bad) == (JSON_EVENTS, 4, AVRO_EVENTS, 4)
    declared_cdc = demo_run.declared["cdc"]
    cdc_topic = declared_cdc["topics"][0]
    cdc_records = read_topic(stack.kafka_bootstrap, cdc_topic, PARTITIONS)
    cdc_feed_ = cdc_feed("d", stack.schema_registry_url, 0)
    cdc_oracle = cdc_feed_.oracle(cdc_records)
    cdc_bad = sum(1 for record in cdc_records if cdc_oracle.is_bad(record))
    assert (len(cdc_records), cdc_bad) == (len(list(change_events(CDC_EVENTS))), 2)
    cdc_rows = cdc_feed_.fold(cdc_records, cdc_oracle)
    json_oracle = json_feed("d", 0).oracle(json_records)
    json_rows = fold_rows(json_records, json_oracle)
    columns = declared_avro["mapping"]["columns"]  # as the demo reads them (mapping_columns)
    avro_oracle = avro_feed("d", columns, stack.schema_registry_url, 0).oracle(avro_records)
    avro_rows = fold_rows(avro_records, avro_oracle)
    declared_session = demo_run.declared["session"]
    session_topic = declared_session["topics"][0]
    session_records = read_topic(stack.kafka_bootstrap, session_topic, PARTITIONS)
    session_bad = sum(1 for _, value in sample_events(SESSION_EVENTS) if value in BAD_VALUES)
    assert (len(session_records), session_bad) == (SESSION_EVENTS, 1)
    session_oracle = json_feed("d", 0).oracle(session_records)
    session_rows = fold_rows(session_records, session_oracle)
    assert demo_run.report == {
        "ok": True,
        "pipelines": [
            {
                "pipeline": declared_json["name"],
                "topic": json_topic,
                "spark_mode": "submit",
                "produced_this_run": JSON_EVENTS,
                "stream_runs": 1,
                "dead_letter_topic": {"topic": declared_json["dead_letters"]["topic"], "records": json_bad},
                **_figures(json_records, json_rows, json_bad),
                "audit": _audit(json_records, json_oracle.is_bad),
            },
            {
                "pipeline": declared_avro["name"],
                "topic": avro_topic,
                "spark_mode": "submit",
                "produced_this_run": AVRO_EVENTS,
                "stream_runs": 1,
                **_figures(avro_records, avro_rows, avro_bad),
                "audit": _audit(avro_records, avro_oracle.is_bad),
            },
            {
                "pipeline": declared_cdc["name"],
                "topic": cdc_topic,
                "spark_mode": "submit",
                "produced_this_run": len(cdc_records),
                "stream_runs": 1,
                **_figures(cdc_records, cdc_rows, cdc_bad),
                "audit": _audit(cdc_records, cdc_oracle.is_bad),
            },
            {
                "pipeline": declared_session["name"],
                "topic": session_topic,
                "spark_mode": "session",
                "produced_this_run": SESSION_EVENTS,
                "stream_runs": 1,
                **_figures(session_records, session_rows, session_bad),
                "audit": _audit(session_records, session_oracle.is_bad),
            },
        ],
    }


def test_the_session_pipeline_ran_on_spark_connect(
    stack: StackInfo, airflow_server: AirflowServer, demo_run: DemoRun
) -> None:
    """The summary says which pipeline ran how, and the session pipeline's stream epoch was a
    job on the stack's Spark Connect server (its write task logged the job's tag; the
    submit-mode JSON pipeline's did not)."""
    lines = [line for line in demo_run.stdout.splitlines() if "all checks passed" in line]
    modes = [line.split("; ", 1)[1] for line in lines]
    assert modes[:3] == ["submit mode: a spark-submit per epoch"] * 3
    assert modes[3].startswith("session mode: each epoch a job on the Spark Connect server sc://127.0.0.1:")
    assert len(modes) == 4

    def write_logs(declared: dict[str, Any]) -> str:
        folder = airflow_server.home / "logs" / f"dag_id={stream_dag_id(declared['name'])}"
        return "".join(path.read_text(errors="replace") for path in folder.rglob("*") if path.is_file())

    session_logs, json_logs = write_logs(demo_run.declared["session"]), write_logs(demo_run.declared["json"])
    assert "session write tag=" in session_logs
    assert "session write tag=" not in json_logs and json_logs


def test_the_demo_backfill_chunks_report_their_epochs_to_openlineage(
    stack: StackInfo, airflow_server: AirflowServer, demo_run: DemoRun
) -> None:
    """The replay each pipeline's demo runs is one backfill chunk: its ``chunk.write`` and
    ``chunk.commit`` report the topic, the table and the backfill epoch (WRITTEN, then
    COMMITTED) with the ledger's ids, ranges and counts."""
    for declared in demo_run.declared.values():
        name, topic, table = declared["name"], declared["topics"][0], declared["hbase"]["table"]
        dag_id = backfill_dag_id(name)
        with Ledger(stack.ledger_dsn) as ledger:
            (epoch,) = ledger.epochs(EpochFilter(pipeline=name, kind=EpochKind.BACKFILL))
        first_partition = [
            r for r in read_topic(stack.kafka_bootstrap, topic, PARTITIONS) if r.partition == 0
        ]
        end = min(REPLAY_OFFSETS, max(r.offset for r in first_partition) + 1)
        events = airflow_server.lineage_events(dag_id, count=4)
        completes = {e["job"]["name"]: e for e in events if e["eventType"] == "COMPLETE"}
        assert sorted((e["eventType"], e["job"]["name"]) for e in events) == [
            ("COMPLETE", f"{dag_id}.chunk.commit"),
            ("COMPLETE", f"{dag_id}.chunk.write"),
            ("START", f"{dag_id}.chunk.commit"),
            ("START", f"{dag_id}.chunk.write"),
        ]
        assert [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges] == [(topic, 0, 0, end)]
        metrics = epoch.metrics or {}
        for task, state in (("chunk.write", "WRITTEN"), ("chunk.commit", "COMMITTED")):
            event = completes[f"{dag_id}.{task}"]
            assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [
                (f"kafka://{stack.kafka_bootstrap.split(',')[0]}", topic)
            ]
            assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [
                (f"hbase://{stack.hbase_host}:{stack.hbase_port}", f"default:{table}")
            ]
            facet = {k: v for k, v in event["run"]["facets"]["eo_epoch"].items() if not k.startswith("_")}
            assert facet == {
                "pipeline": name,
                "epochId": epoch.epoch_id,
                "kind": "backfill",
                "state": state,
                "ranges": [{"topic": topic, "partition": 0, "start": 0, "end": end, "records": end}],
                "rangesOmitted": 0,
                "recordsTotal": end,
                "records": metrics["records"],
                "badRecords": metrics["bad_records"],
                "skippedOffsets": metrics["skipped_offsets"],
            }
