"""The demo: ``python -m eo_devtools.demo`` (what ``scripts/demo.sh`` runs).

Starts the local stack with Airflow (api-server, scheduler, dag-processor, triggerer), then
runs the repository's demo pipelines (``dags/pipelines.yaml``) one after the other
(:mod:`eo_devtools.demo.pipeline_demo`): ``demo_events`` (JSON: several partitions, updates
to the same keys, tombstones, bad records), then ``demo_orders_avro`` (Avro from the stack's
Schema Registry: schema v1 and v2 interleaved in the same partitions, tombstones, bad
records) when the served pipelines file has it, then ``demo_customers_cdc`` (Debezium-shaped
Avro change events: inserts, updates, deletes with their tombstones, a re-snapshot, one
row's changes over several partitions; checked against the simulated table) when it has
that, and last ``demo_events_session`` (demo_events' JSON with ``spark.mode: session``: each
epoch a job on the stack's Spark Connect server instead of a spark-submit) when it has that:
the server (``eo-stack up --spark-connect``) starts in the background while the other
pipelines run, and the Airflow gets its ``spark_connect`` connection
(:mod:`eo_devtools.demo.session_server`). For each: create its topic and its table
(KEEP_DELETED_CELLS TRUE: its topic carries tombstones), produce, trigger its stream DAG
through Airflow's REST API until the topic is drained, replay an old range through its
backfill DAG, and verify every invariant against every record the topic holds (so reruns
are checked as exactly as the first run). Then ``eo-ledger audit`` runs over each pipeline's
committed epochs (:mod:`eo_devtools.demo.audit_step`). Prints one JSON report with every pipeline
(each with its ``spark_mode``), a line per pipeline saying how its epochs ran, then
where the Airflow UI is, how to log in and what to look at. Exits 1 on any mismatch or
failed run.

``--airflow-home DIR --dags-folder DIR`` drive an Airflow already running on the stack
instead of starting the stack's own (:mod:`eo_devtools.demo.served_airflow`; the test suite
runs the demo so on its session Airflow); ``--pipeline``, ``--avro-pipeline``,
``--cdc-pipeline`` and ``--session-pipeline`` pick the served pipelines the four parts run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from airflow_provider_eo.config import PipelineSpec, load_pipelines
from airflow_provider_eo.ledger import Ledger
from eo_devtools.demo.audit_step import audit_pipeline
from eo_devtools.demo.feeds import DemoFeed, avro_feed, cdc_feed, json_feed, mapping_columns
from eo_devtools.demo.guide import closing_guide
from eo_devtools.demo.pipeline_demo import PipelineDemo, run_pipeline_demo
from eo_devtools.demo.scheduled_runs import ScheduledRuns
from eo_devtools.demo.served_airflow import ServedAirflow
from eo_devtools.demo.session_server import SessionServer
from eo_devtools.stack.airflow_api import AirflowClient
from eo_devtools.stack.cli import default_state_dir
from eo_devtools.stack.stack import LocalStack

DEFAULT_PIPELINE = "demo_events"
AVRO_PIPELINE = "demo_orders_avro"
CDC_PIPELINE = "demo_customers_cdc"
SESSION_PIPELINE = "demo_events_session"


def _say(message: str) -> None:
    print(f"demo: {message}", flush=True)


def _feeds(
    stack: LocalStack, specs: dict[str, PipelineSpec], pipelines_file: Path, args: argparse.Namespace
) -> dict[str, DemoFeed]:
    """The JSON pipeline's feed, then the Avro, the CDC and the session-mode ones when the served
    file has them."""
    feeds = {args.pipeline: json_feed(specs[args.pipeline].column_family, args.events)}
    avro, cdc = args.avro_pipeline, args.cdc_pipeline
    if avro not in specs:
        _say(f"{pipelines_file} has no {avro} pipeline: the Avro part is off")
    else:
        columns = mapping_columns(pipelines_file, avro)
        registry = stack.schema_registry_url
        feeds[avro] = avro_feed(specs[avro].column_family, columns, registry, args.avro_events)
    if cdc not in specs:
        _say(f"{pipelines_file} has no {cdc} pipeline: the CDC part is off")
    else:
        feeds[cdc] = cdc_feed(specs[cdc].column_family, stack.schema_registry_url, args.cdc_events)
    session = args.session_pipeline
    if session not in specs:
        _say(f"{pipelines_file} has no {session} pipeline: the session-mode part is off")
    else:
        feeds[session] = json_feed(specs[session].column_family, args.session_events)
    return feeds


def _how_it_ran(demo: PipelineDemo, connect_url: str | None) -> str:
    """How the pipeline's epochs were written, for the closing summary."""
    if demo.spark_mode == "session":
        return f"session mode: each epoch a job on the Spark Connect server {connect_url}"
    return "submit mode: a spark-submit per epoch"


def _airflow(stack: LocalStack, args: argparse.Namespace) -> ServedAirflow:
    """Start the stack (and its Airflow, unless ``--airflow-home`` names a running one)."""
    if args.airflow_home is None:
        stack.up(airflow=True)
        return ServedAirflow.of(stack.airflow().config)
    stack.up()
    return ServedAirflow.running(args.airflow_home, args.dags_folder)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; 0 when every run succeeded and every check passes."""
    parser = argparse.ArgumentParser(prog="python -m eo_devtools.demo")
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument(
        "--pipeline", default=DEFAULT_PIPELINE, help="a JSON pipeline of the served DAG folder"
    )
    parser.add_argument(
        "--avro-pipeline", default=AVRO_PIPELINE, help="an Avro pipeline of the served DAG folder"
    )
    parser.add_argument(
        "--cdc-pipeline", default=CDC_PIPELINE, help="a CDC (Debezium Avro) pipeline of the served DAG folder"
    )
    parser.add_argument(
        "--session-pipeline",
        default=SESSION_PIPELINE,
        help="a pipeline of the served DAG folder the demo runs last (with spark.mode: session)",
    )
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--cdc-events", type=int, default=2000, help="change events for the CDC pipeline")
    parser.add_argument("--avro-events", type=int, default=3000, help="records for the Avro pipeline")
    parser.add_argument(
        "--session-events", type=int, default=2000, help="JSON events for the session-mode pipeline"
    )
    parser.add_argument("--partitions", type=int, default=4, help="when the demo creates a topic")
    parser.add_argument("--max-runs", type=int, default=12, help="stream runs per pipeline at most")
    parser.add_argument(
        "--airflow-home", type=Path, help="drive this running Airflow (its AIRFLOW_HOME) on the stack"
    )
    parser.add_argument("--dags-folder", type=Path, help="the DAG folder the --airflow-home Airflow serves")
    args = parser.parse_args(argv)
    if (args.airflow_home is None) != (args.dags_folder is None):
        parser.error("--airflow-home and --dags-folder go together")

    stack = LocalStack(args.state_dir)
    airflow = _airflow(stack, args)
    os.environ.update(stack.conn_env())  # the hooks read AIRFLOW_CONN_EO_KAFKA, AIRFLOW_CONN_EO_HBASE
    _say(f"local stack and Airflow up in {stack.state_dir}; Airflow UI at {airflow.url}")
    pipelines_file = airflow.pipelines_file
    specs = load_pipelines(pipelines_file)
    client = AirflowClient.from_login_file(airflow.login_path)
    runs = ScheduledRuns(client, airflow.log_folder)
    feeds = _feeds(stack, specs, pipelines_file, args)
    in_session = [name for name in feeds if specs[name].spark.mode == "session"]
    server = SessionServer.start(stack) if in_session else None  # while the others run
    connect_url: str | None = None

    demos: list[PipelineDemo] = []
    for name, feed in feeds.items():
        spec = specs[name]
        if server is not None and spec.spark.mode == "session":
            try:
                connect_url = server.ready(client, spec.spark.connect_conn_id)
            except Exception as exc:  # the report names it, as it names a failed run
                failed = PipelineDemo(name, spec.topics[0], spec.spark.mode)
                failed.failure = f"the stack's Spark Connect server: {type(exc).__name__}: {exc}"
                demos.append(failed)
                print(failed.failure, file=sys.stderr)
                break
            _say(f"{name}: spark.mode session: its epochs run as jobs on {connect_url} (no spark-submit)")
        demo = run_pipeline_demo(
            stack, runs, spec, feed, partitions=args.partitions, max_runs=args.max_runs, say=_say
        )
        demos.append(demo)
        if demo.failure:
            print(demo.failure, file=sys.stderr)
            break

    if not any(d.failure for d in demos):  # the demo ends with the audit of each pipeline
        ledger = Ledger(stack.ledger_dsn)
        for demo in demos:
            demo.audit = audit_pipeline(ledger, pipelines_file, demo.pipeline)
            audited = demo.audit
            _say(
                f"{demo.pipeline}: eo-ledger audit of {audited.get('epochs')} committed epochs "
                f"({audited.get('offsets')} offsets): verdict {audited['verdict']}, "
                f"{audited.get('discrepancies')} discrepancies"
            )
        ledger.close()
    print(json.dumps({"ok": all(d.ok for d in demos), "pipelines": [d.to_dict() for d in demos]}, indent=2))
    if not all(d.ok for d in demos):
        _say("CHECKS FAILED")
        return 1
    for demo in demos:
        records = demo.report.records_produced if demo.report else 0
        _say(
            f"{demo.pipeline}: all checks passed ({records} records in {demo.topic}, {demo.produced} new);"
            f" {_how_it_ran(demo, connect_url)}"
        )
    login = json.loads(airflow.login_path.read_text())
    first = demos[0]
    guide = closing_guide(
        url=airflow.url,
        username=login["username"],
        login_file=airflow.login_path,
        pipeline=first.pipeline,
        topic=first.topic,
        stream_runs=first.stream_runs,
        state_dir=stack.state_dir,
        other_pipelines=[d.pipeline for d in demos[1:]],
    )
    print(guide, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
