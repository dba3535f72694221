"""The suite's command line: which sections run, on which stack, and the report they make."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import write_memory, write_throughput
from benchmarks.dataset import delete_topic, produce_dataset
from benchmarks.report import machine, merge_reports, table, write_report
from benchmarks.targets import check_targets
from eo_devtools.stack.stack import LocalStack

SECTIONS = (
    "write",
    "memory",
    "audit",
    "avro",
    "cdc",
    "big_records",
    "reserve_commit",
    "many_pipelines",
    "scaling",
    "epoch_overhead",
    "freshness",
    "spark_native",
    "partition_spread",
    "session_write",
    "session_fleet",
    "demo",
)
#: Sections that need the stack's Spark Connect server (started for the run when it is not running).
SESSION_SECTIONS = ("partition_spread", "session_write", "session_fleet", "epoch_overhead", "freshness")
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "latest.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="airflow-provider-eo benchmarks"
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes (minutes instead of an hour)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}")
    parser.add_argument(
        "--records", type=int, default=None, help="write dataset size (default 1M, quick 100k)"
    )
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument(
        "--freshness-window-s",
        type=float,
        default=None,
        help="freshness: measured seconds per run (default 300, quick 60)",
    )
    parser.add_argument(
        "--session-fleet-window-s",
        type=float,
        default=None,
        help="session_fleet: counted seconds per mode (default 300, quick 60)",
    )
    parser.add_argument(
        "--state-dir", type=Path, default=Path(os.environ.get("EO_STACK_STATE_DIR", ".eo-state"))
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the other sections of the report at --output; replace only those run now",
    )
    args = parser.parse_args(argv)
    args.sections = [s for s in args.only.split(",") if s]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)} (known: {', '.join(SECTIONS)})")
    return args


def session_server(stack: LocalStack, args: argparse.Namespace) -> dict[str, Any] | None:
    """The Connect server of the session sections, started when it does not run
    (:func:`benchmarks.session_write_step.connect_server`); None when no such section runs."""
    if not set(SESSION_SECTIONS) & set(args.sections):
        return None
    from benchmarks.session_write_step import connect_server

    return connect_server(stack)


def run_sections(
    stack: LocalStack, args: argparse.Namespace, server: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every selected section's results, merged into one report body (``server``: the
    Connect server's :func:`session_server`, for the session sections)."""
    report: dict[str, Any] = {}
    records = args.records or (100_000 if args.quick else 1_000_000)
    if server is not None:
        report["session_server"] = server
    if {"write", "memory", "session_write"} & set(args.sections):
        dataset = produce_dataset(stack.kafka_bootstrap, records, args.partitions)
        try:
            if {"write", "memory"} & set(args.sections):
                report["write"] = write_throughput.run(stack, dataset)
            if "memory" in args.sections:
                report["memory"] = write_memory.run(stack, dataset, report["write"]["runs"]["write_step"])
                report["memory_ratio_10m_1m"] = report["memory"]["ratio"]
            if "session_write" in args.sections and server is not None:
                from benchmarks import session_throughput

                report["session_write"] = session_throughput.run(stack, dataset, server)
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
    if "audit" in args.sections:
        from benchmarks import audit_throughput

        dataset = produce_dataset(stack.kafka_bootstrap, records, args.partitions)
        try:
            report["audit"] = audit_throughput.run(stack, dataset)
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
    if "avro" in args.sections:
        report["avro"] = _avro_section(stack, records, args.partitions)
    if "cdc" in args.sections:
        report["cdc"] = _cdc_section(stack, records, args.partitions)
    if "big_records" in args.sections:
        from benchmarks import big_records

        report["big_records"] = big_records.run(stack, quick=args.quick)
    if "reserve_commit" in args.sections:
        from benchmarks import reserve_commit

        report.update(reserve_commit.run(stack, quick=args.quick))
    if "many_pipelines" in args.sections:
        from benchmarks import many_pipelines

        report.update(many_pipelines.run(stack, quick=args.quick))
    if "scaling" in args.sections:
        from benchmarks import scaling

        size = min(records, scaling.QUICK_RECORDS if args.quick else scaling.FULL_RECORDS)
        dataset = produce_dataset(stack.kafka_bootstrap, size, args.partitions)
        try:
            report.update(scaling.run(stack, dataset, quick=args.quick))
        finally:
            delete_topic(stack.kafka_bootstrap, dataset.topic)
    if "spark_native" in args.sections:
        from benchmarks import spark_native

        sizes = spark_native.QUICK_SIZES if args.quick else spark_native.SIZES
        report.update(spark_native.run(stack, sizes=sizes, partitions=args.partitions))
    if "partition_spread" in args.sections:
        from benchmarks import partition_spread

        report["partition_spread"] = partition_spread.run(stack)
    if "session_fleet" in args.sections:
        from benchmarks import session_fleet

        report["session_fleet"] = session_fleet.run(
            stack, quick=args.quick, window_s=args.session_fleet_window_s
        )
    if "epoch_overhead" in args.sections:
        from benchmarks import epoch_overhead

        report.update(epoch_overhead.run(stack, quick=args.quick))
    if "freshness" in args.sections:
        from benchmarks import freshness

        report.update(freshness.run(stack, quick=args.quick, window_s=args.freshness_window_s))
    if "demo" in args.sections:
        from benchmarks import demo_run

        report["demo"] = demo_run.run()
    return report


def _avro_section(stack: LocalStack, records: int, partitions: int) -> dict[str, Any]:
    """The write dataset in JSON and in Avro (two fresh topics), written alternately."""
    from benchmarks import avro_throughput
    from benchmarks.avro_dataset import delete_subject, produce_avro_dataset

    registry_url = stack.schema_registry_url
    json_data = produce_dataset(stack.kafka_bootstrap, records, partitions)
    try:
        avro_data = produce_avro_dataset(stack.kafka_bootstrap, registry_url, records, partitions)
        try:
            return avro_throughput.run(stack, json_data, avro_data)
        finally:
            delete_topic(stack.kafka_bootstrap, avro_data.topic)
            delete_subject(registry_url, avro_data.topic)
    finally:
        delete_topic(stack.kafka_bootstrap, json_data.topic)


def _cdc_section(stack: LocalStack, records: int, partitions: int) -> dict[str, Any]:
    """The write dataset in plain Avro and as Avro change events (two fresh topics), written in turn."""
    from benchmarks import cdc_throughput
    from benchmarks.avro_dataset import delete_subject, produce_avro_dataset
    from benchmarks.cdc_dataset import produce_cdc_dataset

    registry_url = stack.schema_registry_url
    plain = produce_avro_dataset(stack.kafka_bootstrap, registry_url, records, partitions)
    try:
        cdc = produce_cdc_dataset(stack.kafka_bootstrap, registry_url, records, partitions)
        try:
            return cdc_throughput.run(stack, plain, cdc)
        finally:
            delete_topic(stack.kafka_bootstrap, cdc.topic)
            delete_subject(registry_url, cdc.topic)
    finally:
        delete_topic(stack.kafka_bootstrap, plain.topic)
        delete_subject(registry_url, plain.topic)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; returns 0 when every measured target is met, 1 otherwise."""
    args = parse_args(argv)
    stack = LocalStack(args.state_dir)
    started_here = not stack.is_up()
    if started_here:  # epoch_overhead starts an Airflow of its own on the stack's PostgreSQL
        stack.up(airflow=False)
    began = time.monotonic()
    server: dict[str, Any] | None = None
    try:
        server = session_server(stack, args)
        body = run_sections(stack, args, server)
    finally:
        if started_here:
            stack.down()
        elif server is not None and server["started_here"]:
            stack.spark_connect_down()
    report = {
        "mode": "quick" if args.quick else "full",
        "sections": args.sections,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - began),
        "machine": machine(),
        **body,
    }
    if args.merge and args.output.exists():
        report = merge_reports(json.loads(args.output.read_text()), report)
    report["targets"] = check_targets(report)
    write_report(report, args.output)
    print(table(report))
    print(f"report: {args.output}")
    return 0 if all(check["met"] is not False for check in report["targets"]) else 1
