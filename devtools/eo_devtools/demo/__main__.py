"""The demo: ``python -m eo_devtools.demo`` (what ``scripts/demo.sh`` runs).

Starts the local stack with Airflow (api-server, scheduler, dag-processor, triggerer),
produces sample events (several partitions, updates to the same keys, tombstones, bad
records) to the topic of the repository's ``demo_events`` pipeline (``dags/pipelines.yaml``),
triggers its stream DAG through Airflow's REST API until the topic is drained (each run
one epoch, capped by the pipeline), replays an old range through its backfill DAG, then
verifies every invariant against every record the topic holds (so reruns are checked
as exactly as the first run) and prints a JSON report, then where the Airflow UI is,
how to log in and what to look at. Exits 1 on any mismatch or failed run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import happybase

from airflow_provider_eo.config import load_pipelines
from airflow_provider_eo.dags.factory import backfill_dag_id, stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from eo_devtools.demo.guide import closing_guide
from eo_devtools.demo.sample_events import produce_records, sample_events
from eo_devtools.demo.scheduled_runs import ScheduledRuns
from eo_devtools.demo.tables import ensure_table
from eo_devtools.demo.topic_records import ensure_topic, read_topic
from eo_devtools.demo.verification import verify_pipeline
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.cli import default_state_dir
from eo_devtools.stack.hbase_admin import HBaseTableTool
from eo_devtools.stack.stack import LocalStack

DEFAULT_PIPELINE = "demo_events"
REPLAY_OFFSETS = 300


def _say(message: str) -> None:
    print(f"demo: {message}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; 0 when every run succeeded and every check passes."""
    parser = argparse.ArgumentParser(prog="python -m eo_devtools.demo")
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument("--pipeline", default=DEFAULT_PIPELINE, help="a pipeline of the served DAG folder")
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--partitions", type=int, default=4, help="when the demo creates the topic")
    parser.add_argument("--max-runs", type=int, default=12)
    args = parser.parse_args(argv)

    stack = LocalStack(args.state_dir)
    stack.up(airflow=True)
    airflow = stack.airflow().config
    os.environ.update(stack.conn_env())  # EoKafkaHook reads AIRFLOW_CONN_EO_KAFKA
    _say(f"local stack and Airflow up in {stack.state_dir}; Airflow UI at {airflow.url}")
    spec = load_pipelines(airflow.dags_folder / "pipelines.yaml")[args.pipeline]
    topic = spec.topics[0]
    partitions = ensure_topic(stack.kafka_bootstrap, topic, args.partitions)
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    table = ensure_table(
        HBaseTableTool(stack.state_dir), hbase, spec.hbase_table, spec.column_family, takes_tombstones=True
    )
    _say(table.describe())
    produced = produce_records(stack.kafka_bootstrap, topic, partitions, sample_events(args.events))
    _say(f"produced {len(produced)} records to {topic} ({partitions} partitions)")

    runs = ScheduledRuns(AirflowClient.from_login_file(airflow.login_path), airflow.home / "logs")
    stream, backfill = stream_dag_id(spec.name), backfill_dag_id(spec.name)
    runs.prepare(stream)
    runs.prepare(backfill)
    ledger = Ledger(stack.ledger_dsn)
    ends = {(r.topic, r.partition): r.offset + 1 for r in sorted(produced, key=lambda r: r.offset)}
    stream_runs = 0
    for run in range(1, args.max_runs + 1):
        outcome = runs.run(stream)
        stream_runs += 1
        cursors = ledger.cursors(spec.name)
        lag = sum(end - cursors.get(tp, 0) for tp, end in ends.items())
        _say(f"stream run {run} ({outcome.run_id}): {outcome.state}; lag now {lag}")
        if outcome.state != "success":
            print(outcome.describe(), file=sys.stderr)
            return 1
        if lag == 0:
            break

    replay = {"partitions": [0], "start_offset": 0, "end_offset": min(REPLAY_OFFSETS, ends[(topic, 0)])}
    outcome = runs.run(backfill, conf=replay)
    _say(f"backfill replay of {topic}[0] offsets [0, {replay['end_offset']}): {outcome.state}")
    if outcome.state != "success":
        print(outcome.describe(), file=sys.stderr)
        return 1

    everything = read_topic(stack.kafka_bootstrap, topic, partitions)
    report = verify_pipeline(spec, everything, ledger=ledger, offsets=EoKafkaHook(), hbase=hbase)
    print(json.dumps({"pipeline": spec.name, **report.to_dict()}, indent=2))
    if not report.ok:
        _say("CHECKS FAILED")
        return 1
    _say(f"all checks passed ({len(everything)} records in {topic}, this run produced {len(produced)})")
    login = json.loads(airflow.login_path.read_text())
    guide = closing_guide(
        url=airflow.url,
        username=login["username"],
        login_file=airflow.login_path,
        pipeline=spec.name,
        topic=topic,
        stream_runs=stream_runs,
        state_dir=stack.state_dir,
    )
    print(guide, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
