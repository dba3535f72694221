"""The demo: ``python -m eo_devtools.demo`` (what ``scripts/demo.sh`` runs).

Starts the local stack, produces sample events (several partitions, updates to the
same keys, tombstones, bad records), runs the stream DAG through real Airflow until
the topic is drained, replays an old range through the backfill DAG, then verifies
every invariant and prints a JSON report. Exits 1 on any mismatch.

Each demo run declares a fresh pipeline (``demo_<tag>``: its own topic, consumer
group and HBase table) in ``<state-dir>/demo/``, so runs never disturb each other.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import happybase
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.config import load_pipelines
from airflow_provider_eo.dags.factory import backfill_dag_id, stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from eo_devtools.demo.airflow_runner import AirflowRunner
from eo_devtools.demo.sample_events import produce_records, sample_events
from eo_devtools.demo.verification import verify_pipeline
from eo_devtools.stack.cli import default_state_dir
from eo_devtools.stack.stack import LocalStack


def demo_pipeline(tag: str, max_records_total: int) -> dict[str, object]:
    """The demo's pipeline declaration (the same schema as dags/pipelines.yaml)."""
    return {
        "name": f"demo_{tag}",
        "topics": [f"eo_demo_{tag}"],
        "group_id": f"eo-demo-{tag}",
        "hbase": {"table": f"demo_{tag}", "column_family": "d"},
        "caps": {"max_records_total": max_records_total},
        "bad_records": "dead_letter",
        "spark": {"split_size": 500, "conf": {"spark.ui.enabled": "false"}},
        "batch_size": 500,
    }


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic``; raises RuntimeError naming it on failure."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    try:
        futures[topic].result(30)
    except Exception as exc:
        raise RuntimeError(f"creating topic {topic} with {partitions} partitions: {exc}") from exc


def _say(message: str) -> None:
    print(f"demo: {message}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; 0 when every check passes."""
    parser = argparse.ArgumentParser(prog="python -m eo_devtools.demo")
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-records-per-epoch", type=int, default=2500)
    parser.add_argument("--max-runs", type=int, default=12)
    args = parser.parse_args(argv)

    stack = LocalStack(args.state_dir)
    stack.up()
    _say(f"local stack up in {args.state_dir}")
    conn_env = stack.conn_env()
    os.environ.update(conn_env)
    tag = time.strftime("%Y%m%d%H%M%S")
    pipelines_file = args.state_dir / "demo" / f"pipelines-{tag}.yaml"
    pipelines_file.parent.mkdir(parents=True, exist_ok=True)
    pipelines_file.write_text(yaml.safe_dump({"pipelines": [demo_pipeline(tag, args.max_records_per_epoch)]}))
    spec = load_pipelines(pipelines_file)[f"demo_{tag}"]
    topic = spec.topics[0]

    create_topic(stack.kafka_bootstrap, topic, args.partitions)
    happybase.Connection(stack.hbase_host, stack.hbase_port).create_table(spec.hbase_table, {"d": {}})
    produced = produce_records(stack.kafka_bootstrap, topic, args.partitions, sample_events(args.events))
    _say(f"produced {len(produced)} records to {topic} ({args.partitions} partitions)")

    runner = AirflowRunner(args.state_dir / "airflow", conn_env, pipelines_file=pipelines_file)
    runner.migrate()
    ledger = Ledger(stack.ledger_dsn)
    ends = {(r.topic, r.partition): r.offset + 1 for r in produced}
    for run in range(1, args.max_runs + 1):
        outcome = runner.run(stream_dag_id(spec.name))
        cursors = ledger.cursors(spec.name)
        lag = sum(end - cursors.get(tp, 0) for tp, end in ends.items())
        _say(f"stream run {run}: {outcome.state}; lag now {lag}")
        if outcome.state != "success":
            print(outcome.log[-4000:], file=sys.stderr)
            return 1
        if lag == 0:
            break

    replay = {"partitions": [0], "start_offset": 0, "end_offset": min(300, ends[(topic, 0)])}
    outcome = runner.run(backfill_dag_id(spec.name), conf=replay)
    _say(f"backfill replay of {topic}[0] offsets [0, {replay['end_offset']}): {outcome.state}")
    if outcome.state != "success":
        print(outcome.log[-4000:], file=sys.stderr)
        return 1

    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    report = verify_pipeline(spec, produced, ledger=ledger, offsets=EoKafkaHook(), hbase=hbase)
    print(json.dumps({"pipeline": spec.name, **report.to_dict()}, indent=2))
    _say("all checks passed" if report.ok else "CHECKS FAILED")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
